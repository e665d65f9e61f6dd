// A long call's call_analyzed (docs/webhooks.md#large-bodies). The call webhook takes
// bodies up to 32 MiB — a two-hour call with its word-level transcript_object is about 3 MB — keeps only
// the bounded snapshot (transcript capped at 200,000 characters, transcript_object not stored,
// the job small), checks the signature before it parses, and other routes keep their 2 MiB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { newOutboundCall } from '../../core/domain/calls/calls.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { deliveredCallEvents } from '../helpers/webhook-outbox.js';
import { callsOf, createAgent } from './support.js';
import { longCallAnalyzed } from './long-call-fixture.js';

const SECRET = 'whsec_long_call_test_secret';
const MiB = 1024 * 1024;

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => stack?.stop());

/** One of our outbound calls, registered, as if just dialled. */
async function ourCall(): Promise<string> {
  const db = stack.services.mongo.db;
  const firmDoc = (await getFirm(db, firm.slug))!;
  const agent = (await db.collection<AgentDoc>(COLLECTIONS.agents).findOne({ _id: agentId }))!;
  const doc = newOutboundCall({ firm: firmDoc, agent, toNumber: '+14155550142' }, 'retell');
  await callsOf(stack).insertOne(doc);
  return doc._id;
}

/** POSTs raw text signed as Retell signs it (retell-sdk's scheme, the firm's secret). */
function postSigned(raw: string, signature = signRetellWebhook(raw, SECRET)) {
  return stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signature },
  });
}

/**
 * The data of each delivery of a provider call: its job's (done ones too), or its outbox entry's.
 * An add slower than ENQUEUE_TIMEOUT_MS keeps a delivery in the webhook outbox until the
 * workers' drain moves it, and a 3 MB body's request is the one most likely to be that slow on
 * a loaded machine.
 */
const deliveriesFor = async (providerCallId: string) => {
  const { jobs, kept } = await deliveredCallEvents(stack, [providerCallId], { completed: true });
  return [...jobs.map((j) => j.data), ...kept.map((entry) => entry.data)];
};

describe('a long call’s call_analyzed', () => {
  it('a 120-minute call’s 3 MB call_analyzed is 200: the call ends, only the bounded snapshot is kept', async () => {
    const callId = await ourCall();
    const providerId = `call_${rand(12)}`;
    const body = longCallAnalyzed({ providerCallId: providerId, ourCallId: callId, minutes: 120 });
    const raw = JSON.stringify(body);
    expect(Buffer.byteLength(raw)).toBeGreaterThan(2.8 * 1e6); // over the 2 MiB every other route keeps
    expect(body.call.transcript_object!.length).toBeGreaterThan(1000);

    const res = await postSigned(raw);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ received: true });

    // The job in BullMQ (or its outbox entry) holds the snapshot only: no word-level data, a size
    // near the transcript's.
    const [data, ...others] = await deliveriesFor(providerId);
    expect(data).toBeDefined();
    for (const other of others) expect(other).toEqual(data); // a slow add's job and its entry
    const jobJson = JSON.stringify(data);
    expect(jobJson.length).toBeLessThan(body.call.transcript!.length + 20_000);
    expect(Object.keys(data.call)).not.toContain('transcript_object');
    expect(jobJson).not.toContain('"words"');
    expect(jobJson).not.toContain('transcript_with_tool_calls');
    expect(jobJson).not.toContain('call_cost');

    const call = await eventually(async () => {
      const got = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(got.body.status).toBe('ended');
      expect(got.body.call_analysis).not.toBeNull();
      return got.body;
    }, 30_000);
    expect(call.transcript).toBe(body.call.transcript);
    expect(call.duration_ms).toBe(120 * 60_000);
    expect(call.call_analysis.custom_analysis_data.last_name).toBe('Whitfield');
    const stored = JSON.stringify(await callsOf(stack).findOne({ _id: callId }));
    expect(stored).not.toContain('transcript_object');
    expect(stored).not.toContain('"words"');
  });

  it('a 240-minute call (6 MB): 200, the transcript kept is its first 200,000 characters', async () => {
    const callId = await ourCall();
    const body = longCallAnalyzed({ providerCallId: `call_${rand(12)}`, ourCallId: callId, minutes: 240 });
    expect(body.call.transcript!.length).toBeGreaterThan(200_000);
    const res = await postSigned(JSON.stringify(body));
    expect(res.status, res.text).toBe(200);
    const call = await eventually(async () => {
      const got = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(got.body.status).toBe('ended');
      return got.body;
    }, 30_000);
    expect(call.transcript).toHaveLength(200_000);
    expect(call.transcript).toBe(body.call.transcript!.slice(0, 200_000));
  });

  it('the signature is checked on the raw body before it is parsed: a bad one is 401 even for broken JSON', async () => {
    const raw = JSON.stringify(longCallAnalyzed({ providerCallId: `call_${rand(12)}` }));
    const broken = raw.slice(0, -10); // not JSON any more
    const wrong = signRetellWebhook(broken, 'whsec_not_the_firms');
    expectError(await postSigned(broken, wrong), 401, 'unauthorized');
    // Signed correctly, the same broken text is a 400 (it was parsed after the signature matched).
    expectError(await postSigned(broken), 400, 'invalid_request');
    // A tampered 3 MB body with the original's signature: 401, nothing enqueued.
    const id = `call_${rand(12)}`;
    const good = JSON.stringify(longCallAnalyzed({ providerCallId: id }));
    const res = await postSigned(good.replace('"Whitfield"', '"Whitfeld"'), signRetellWebhook(good, SECRET));
    expectError(res, 401, 'unauthorized');
    expect(await deliveriesFor(id)).toHaveLength(0);
  });

  it('a body over 32 MiB is 413 payload_too_large, with a Content-Length or without one', async () => {
    const id = `call_${rand(12)}`;
    const body = { ...longCallAnalyzed({ providerCallId: id, minutes: 1 }), padding: 'x'.repeat(33 * MiB) };
    const raw = JSON.stringify(body);
    const res = await postSigned(raw);
    expectError(res, 413, 'payload_too_large');
    expect(res.body.error.message).toContain('32 MiB');
    // Chunked (no Content-Length): refused once more than 32 MiB has arrived.
    const bytes = Buffer.from(raw);
    const chunked = await fetch(`${stack.api.baseUrl}/api/v2/${firm.slug}/webhook`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
      body: new ReadableStream({
        start(controller) {
          for (let at = 0; at < bytes.length; at += MiB) controller.enqueue(bytes.subarray(at, at + MiB));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit).catch((error: unknown) => error);
    // The rest of the body is read and discarded, so the client gets the answer, not a reset.
    expect(chunked).toBeInstanceOf(Response);
    const answer = chunked as Response;
    expect(answer.status).toBe(413);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    expect(await deliveriesFor(id)).toHaveLength(0);
    // Just under the limit is taken.
    const under = JSON.stringify({ ...body, padding: 'x'.repeat(31 * MiB) });
    expect((await postSigned(under)).status).toBe(200);
  });

  it('read this way, the body keeps the other body rules: NUL becomes U+FFFD, deeper than 64 levels is 400', async () => {
    const callId = await ourCall();
    const body = longCallAnalyzed({ providerCallId: `call_${rand(12)}`, ourCallId: callId, minutes: 30 });
    body.call.transcript = `Agent: hello\u0000there\n${body.call.transcript!}`;
    expect((await postSigned(JSON.stringify(body))).status).toBe(200);
    const call = await eventually(async () => {
      const got = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(got.body.status).toBe('ended');
      return got.body;
    }, 30_000);
    expect(call.transcript.startsWith('Agent: hello\uFFFDthere\n')).toBe(true);
    const deep = `{"event":"call_ended","call":{"call_id":"c1","x":${'['.repeat(70)}${']'.repeat(70)}}}`;
    expectError(await postSigned(deep), 400, 'invalid_request');
  });

  it('other routes keep 2 MiB: a 3 MB body to create-chat is 413', async () => {
    const res = await stack.admin.request('POST', '/api/v2/create-chat', {
      rawBody: JSON.stringify({
        agentId,
        firmSlug: firm.slug,
        dynamicVariables: { notes: 'x'.repeat(3 * 1e6) },
      }),
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(res, 413, 'payload_too_large');
  });
});
