// The Retell provider (retell-sdk) against a local server speaking Retell's endpoints: request
// bodies as Retell documents them, voice mapping and caching, finding a call by our id, error
// statuses, and — through the real queue — 429 pausing the queue instead of failing the job,
// 5xx retried after asking Retell first, a 4xx ending the call as error.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RetellProvider } from '../../core/integrations/voice/retell.js';
import { ProviderError } from '../../core/integrations/voice/provider.js';
import { freePort } from '../../scripts/local/services.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import type { Workers } from '../../workers/runner.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { retellEnv, retellError, startRetellFake, type RetellFake } from '../fakes/retell-server.js';
import { callsOf, createAgent, waitForCall } from './support.js';

let fake: RetellFake;
beforeAll(async () => {
  fake = await startRetellFake();
});
afterAll(async () => fake?.close());

const request = {
  callId: 'call_abc123',
  firm: 'firm-one',
  agentId: 'agent_ours',
  fromNumber: '+14155550100',
  toNumber: '+14155550123',
  dynamicVariables: { first_name: 'Ann', age: '42' },
};

async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

/**
 * The call's place-call job once BullMQ has marked it completed: the call's provider id is stored
 * before, so a job read as soon as the call shows it may still be active (attemptsMade not counted).
 */
async function completedJob(calls: Queue, callId: string) {
  return eventually(async () => {
    const job = await calls.getJob(callId);
    expect(await job!.getState()).toBe('completed');
    return (await calls.getJob(callId))!;
  });
}

describe('RetellProvider against the Retell fake', () => {
  const provider = () => new RetellProvider({ apiKey: fake.apiKey, baseUrl: fake.url });

  it('creates a phone call with Retell’s documented body and our call id in the metadata', async () => {
    const placed = await provider().placeCall({ ...request, providerAgentId: 'retell_agent_9' });
    const [sent] = fake.requestsTo('create-phone-call').slice(-1);
    expect(sent!.method).toBe('POST');
    expect(sent!.path).toBe('/v2/create-phone-call');
    expect(sent!.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(sent!.headers['content-type']).toMatch(/^application\/json/);
    expect(sent!.body).toEqual({
      from_number: '+14155550100',
      to_number: '+14155550123',
      override_agent_id: 'retell_agent_9',
      metadata: { call_id: 'call_abc123', firm: 'firm-one', agent_id: 'agent_ours' },
      retell_llm_dynamic_variables: { first_name: 'Ann', age: '42' },
    });
    expect(placed).toEqual({ providerCallId: fake.calls.at(-1)!.call_id, status: 'registered' });
  });

  it('needs a from_number and says so without calling Retell', async () => {
    const before = fake.requests.length;
    const { fromNumber: _omitted, ...withoutFrom } = request;
    const err = await providerError(provider().placeCall(withoutFrom));
    expect(err.kind).toBe('rejected');
    expect(err.message).toMatch(/from_number/);
    expect(fake.requests.length).toBe(before);
  });

  it('finds a call by our call id through list-calls (v3) with a metadata filter', async () => {
    const placed = await provider().placeCall({ ...request, callId: 'call_find_me' });
    const found = await provider().findCall('call_find_me');
    expect(found).toEqual({ providerCallId: placed.providerCallId, status: 'registered' });
    const [sent] = fake.requestsTo('list-calls').slice(-1);
    expect(sent!.path).toBe('/v3/list-calls');
    expect(sent!.body).toEqual({
      filter_criteria: { metadata: [{ key: 'call_id', op: 'eq', type: 'string', value: 'call_find_me' }] },
      sort_order: 'descending',
      limit: 50,
    });
    expect(await provider().findCall('call_never_placed')).toBeNull();
  });

  it('maps voices to our fields (locale from the accent, gender normalised)', async () => {
    const voices = await provider().listVoices();
    expect(fake.requestsTo('list-voices').at(-1)!.path).toBe('/list-voices');
    expect(voices).toEqual([
      {
        voice_id: '11labs-Adrian',
        name: 'Adrian',
        language: 'en-US',
        gender: 'male',
        provider: 'elevenlabs',
        accent: 'American',
        preview_audio_url: 'https://retell-utils-public.s3.us-west-2.amazonaws.com/adrian.mp3',
      },
      {
        voice_id: 'openai-Alloy',
        name: 'Alloy',
        language: 'en-GB',
        gender: 'female',
        provider: 'openai',
        accent: 'British',
      },
      {
        voice_id: 'cartesia-Lucia',
        name: 'Lucía',
        language: 'es-MX',
        gender: 'female',
        provider: 'cartesia',
        accent: 'Mexican',
      },
    ]);
  });

  it('refuses, as Retell does, a request off retell-sdk’s document: a wrong-case enum, an unknown field, no key', async () => {
    const post = (path: string, body: unknown, auth = `Bearer ${fake.apiKey}`) =>
      fetch(`${fake.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth === '' ? {} : { authorization: auth }) },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
    const wrongCase = await post('/v3/list-calls', { sort_order: 'DESCENDING', limit: 50 });
    expect(wrongCase).toEqual({
      status: 400,
      body: {
        status: 'error',
        message: expect.stringMatching(
          /^Invalid request format.*sort_order must be one of \["ascending","descending"\]/,
        ),
      },
    });
    const unknown = await post('/v2/create-phone-call', {
      ...{ from_number: '+14155550100', to_number: '+14155550123' },
      agent_id: 'x',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/"agent_id"/);
    const noKey = await post(
      '/v2/create-phone-call',
      { from_number: '+14155550100', to_number: '+14155550123' },
      '',
    );
    expect(noKey).toEqual({
      status: 401,
      body: { status: 'error', message: 'API key is missing or invalid.' },
    });
    // Every request our client sent in this file conformed.
    expect(fake.requests.filter((r) => r.problems.length > 0)).toHaveLength(3);
  });

  it('an answer of the fake off the document fails the test that owns the fake', async () => {
    const other = await startRetellFake();
    const offDocument = {
      call_id: 'c1',
      call_type: 'phone_call',
      call_status: 'registered',
      caller_name: 'Ann',
    };
    other.script('create-phone-call', { status: 201, body: offDocument });
    await new RetellProvider({ apiKey: other.apiKey, baseUrl: other.url }).placeCall(request).catch(() => {});
    await expect(other.close()).rejects.toThrow(/"caller_name"/);
  });

  it('classifies errors, and the SDK itself never retries (our queue does)', async () => {
    const cases: Array<[number, Record<string, string>, string, boolean, number | undefined]> = [
      [429, { 'retry-after': '2' }, 'rate_limited', false, 2000],
      [500, {}, 'retryable', true, undefined],
      [503, {}, 'retryable', true, undefined],
      [422, {}, 'rejected', false, undefined],
      [400, {}, 'rejected', false, undefined],
    ];
    for (const [status, headers, kind, mayExist, retryAfter] of cases) {
      // A 503 comes from what stands in front of Retell's API, not from the API's document.
      fake.script('create-phone-call', { status, headers, gateway: status === 503 });
      const before = fake.requestsTo('create-phone-call').length;
      const err = await providerError(provider().placeCall(request));
      expect({ status, kind: err.kind, mayExist: err.callMayExist, retryAfter: err.retryAfterMs }).toEqual({
        status,
        kind,
        mayExist,
        retryAfter,
      });
      expect(fake.requestsTo('create-phone-call').length).toBe(before + 1);
    }
    const wrongKey = new RetellProvider({ apiKey: 'wrong', baseUrl: fake.url });
    expect((await providerError(wrongKey.placeCall(request))).kind).toBe('rejected');
    const down = new RetellProvider({ apiKey: fake.apiKey, baseUrl: `http://127.0.0.1:${await freePort()}` });
    const unreachable = await providerError(down.placeCall(request));
    expect({ kind: unreachable.kind, mayExist: unreachable.callMayExist }).toEqual({
      kind: 'retryable',
      mayExist: true,
    });
  });
});

describe('VOICE_PROVIDER=retell through the API and the calls queue', () => {
  let stack: Stack;
  let firm: Awaited<ReturnType<typeof createFirm>>;
  let agentId: string;
  let secondWorker: Workers | undefined;
  // Every queue pause, by any worker of this process (the calls pass through to BullMQ).
  const pauses = vi.spyOn(Queue.prototype, 'rateLimit');

  beforeAll(async () => {
    stack = await startStack({
      workers: true,
      env: { ...retellEnv(fake) },
    });
    // A second worker process's worth of workers: the 429 pause must hold for both.
    secondWorker = startInProcessWorkers(stack);
    // Every dial takes one of the firm's dial slots until the call's end event, and this Retell
    // fake never sends one: room for all the calls of this block.
    firm = await createFirm(stack, { from_number: '+14155550100', max_concurrent_calls: 1000 });
  });
  afterAll(async () => {
    pauses.mockRestore();
    await secondWorker?.stop();
    await stack?.stop();
  });

  const createCall = (client = firm.client, slug = firm.slug) =>
    client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId,
      firmSlug: slug,
      dynamicVariables: { first_name: 'Ann', vip: true },
    });
  const createRequestsFor = (callId: string) =>
    fake.requestsTo('create-phone-call').filter((r) => r.body?.metadata?.call_id === callId);

  it('lists Retell voices through list-voices, cached in Redis', async () => {
    const before = fake.requestsTo('list-voices').length;
    const first = await firm.client.get('/api/v2/list-voices');
    expect(first.status).toBe(200);
    expect(first.body.map((v: any) => v.voice_id)).toEqual([
      '11labs-Adrian',
      'openai-Alloy',
      'cartesia-Lucia',
    ]);
    expect(first.body[2]).toMatchObject({ language: 'es-MX', gender: 'female' });
    const second = await firm.client.get('/api/v2/list-voices');
    expect(second.body).toEqual(first.body);
    agentId = await createAgent(firm.client, firm.slug, '11labs-Adrian');
    expect(fake.requestsTo('list-voices').length).toBe(before + 1);
  });

  it('while Retell fails, list-voices answers the last list it gave, and without one names the failure as ours (never Retell’s own 401)', async () => {
    const keys = redisKeys(stack.config);
    const redis = stack.services.redis;
    const ids = ['11labs-Adrian', 'openai-Alloy', 'cartesia-Lucia'];
    await redis.del(keys.voiceList('retell'));
    fake.script('list-voices', { status: 500 });
    const stale = await firm.client.get('/api/v2/list-voices');
    expect(stale.status, stale.text).toBe(200);
    expect(stale.body.map((v: any) => v.voice_id)).toEqual(ids);
    // For the next minute the failing Retell is not asked again: the last list stands in.
    const asked = fake.requestsTo('list-voices').length;
    expect((await firm.client.get('/api/v2/list-voices')).body).toEqual(stale.body);
    expect(fake.requestsTo('list-voices').length).toBe(asked);
    expect(await redis.ttl(keys.voiceList('retell'))).toBeLessThanOrEqual(60);

    // No list kept: Retell refusing our key is a 502, its 429 and 500 a 503 with Retry-After.
    await redis.del(keys.voiceList('retell'), keys.voiceListLastGood('retell'));
    fake.script(
      'list-voices',
      { status: 401, body: retellError('API key is missing or invalid.') },
      { status: 429, headers: { 'retry-after': '7' } },
      { status: 500 },
      { status: 500 },
    );
    expectError(await firm.client.get('/api/v2/list-voices'), 502, 'voice_provider_error');
    const limited = await firm.client.get('/api/v2/list-voices');
    expectError(limited, 503, 'unavailable');
    expect(limited.headers.get('retry-after')).toBe('7');
    const failing = await firm.client.get('/api/v2/list-voices');
    expectError(failing, 503, 'unavailable');
    expect(failing.headers.get('retry-after')).toBe('5');
    // create-agent checks its voice against the same list.
    const agent = await firm.client.post('/api/v2/create-agent', {
      firmSlug: firm.slug,
      agent_name: 'Intake',
      voice_id: '11labs-Adrian',
    });
    expectError(agent, 503, 'unavailable');

    // Retell answers again: the list, kept again for the next failure.
    const back = await firm.client.get('/api/v2/list-voices');
    expect(back.body.map((v: any) => v.voice_id)).toEqual(ids);
    expect(JSON.parse((await redis.get(keys.voiceListLastGood('retell')))!)).toEqual(back.body);
  });

  it('a firm without from_number gets 409 from_number_missing and no call', async () => {
    const bare = await createFirm(stack);
    const bareAgent = await createAgent(bare.client, bare.slug, '11labs-Adrian');
    const res = await bare.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: bareAgent,
      firmSlug: bare.slug,
    });
    expectError(res, 409, 'from_number_missing');
    expect(await callsOf(stack).countDocuments({ firm: bare.slug })).toBe(0);
  });

  it('places the call with the firm’s number, our call id and string variables, and records Retell’s call id', async () => {
    const created = await createCall();
    const callId = created.body.call_id;
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: callId }))?.provider_call_id).toBeTruthy(),
    );
    const sent = createRequestsFor(callId);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toEqual({
      from_number: '+14155550100',
      to_number: '+14155550123',
      metadata: { call_id: callId, firm: firm.slug, agent_id: agentId },
      retell_llm_dynamic_variables: { first_name: 'Ann', vip: 'true' },
    });
    const stored = await callsOf(stack).findOne({ _id: callId });
    expect(stored?.provider_call_id).toBe(
      fake.calls.find((c) => (c.metadata as any)?.call_id === callId)?.call_id,
    );
    expect(stored?.dial.state).toBe('done');
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('registered');
  });

  it('dials with the agent’s Retell agent id (override_agent_id) when the agent has one', async () => {
    // Only the platform may map an agent to a Retell agent (test/hardening/provider-agent-id.test.ts).
    const mapped = await stack.admin.post('/api/v2/create-agent', {
      firmSlug: firm.slug,
      agent_name: 'Mapped',
      voice_id: '11labs-Adrian',
      provider_agent_id: 'agent_retell_42',
    });
    expect(mapped.status).toBe(200);
    expect(mapped.body.provider_agent_id).toBe('agent_retell_42');
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: mapped.body.agent_id,
      firmSlug: firm.slug,
    });
    expect(created.status).toBe(200);
    await eventually(async () => expect(createRequestsFor(created.body.call_id)).toHaveLength(1));
    expect(createRequestsFor(created.body.call_id)[0]!.body.override_agent_id).toBe('agent_retell_42');
    const bad = await stack.admin.post('/api/v2/create-agent', {
      firmSlug: firm.slug,
      agent_name: 'Bad',
      voice_id: '11labs-Adrian',
      provider_agent_id: 'has space',
    });
    expectError(bad, 400, 'invalid_request');
  });

  it('a 429 pauses the whole calls queue for Retry-After instead of failing the job', async () => {
    pauses.mockClear();
    fake.script('create-phone-call', { status: 429, headers: { 'retry-after': '3' } });
    const created = await createCall();
    const callId = created.body.call_id;
    await eventually(async () => expect(createRequestsFor(callId)).toHaveLength(1), 10_000, 10);
    const limitedAt = createRequestsFor(callId)[0]!.at;
    // The queue's limiter is set for Retry-After (BullMQ's Queue.rateLimit: a key in Redis that
    // every worker of the queue reads), and calls registered meanwhile wait for it too. Seen as
    // the call that sets it rather than as the key's TTL, which a slow poll could find expired.
    await eventually(async () =>
      expect(pauses.mock.calls.map(([pause], i) => [(pauses.mock.contexts[i] as Queue).name, pause])).toEqual(
        [['calls', 3000]],
      ),
    );
    const others = await Promise.all([createCall(), createCall(), createCall()]);
    const all = [callId, ...others.map((r) => r.body.call_id as string)];
    await eventually(async () => {
      for (const id of all)
        expect((await callsOf(stack).findOne({ _id: id }))?.provider_call_id).toBeTruthy();
    });
    for (const id of all) {
      const placed = createRequestsFor(id).at(-1)!;
      expect(placed.at - limitedAt).toBeGreaterThanOrEqual(2900);
    }
    expect(createRequestsFor(callId)).toHaveLength(2);
    const job = await completedJob(stack.services.queues.calls, callId);
    // One attempt, which succeeded: the 429 was never counted as a failure.
    expect(job.attemptsMade).toBe(1);
    expect(job.stacktrace).toEqual([]);
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.status).toBe('registered');
  });

  it('a 500 is retried with backoff, asking Retell for the call first, and places exactly one call', async () => {
    fake.script('create-phone-call', { status: 500 });
    const created = await createCall();
    const callId = created.body.call_id;
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: callId }))?.provider_call_id).toBeTruthy(),
    );
    expect(createRequestsFor(callId)).toHaveLength(2);
    const asked = fake
      .requestsTo('list-calls')
      .filter((r) => r.body?.filter_criteria?.metadata?.[0]?.value === callId);
    expect(asked).toHaveLength(1);
    // ... and it asked before the second create (request order as the fake received them).
    expect(fake.requests.indexOf(asked[0]!)).toBeLessThan(
      fake.requests.indexOf(createRequestsFor(callId)[1]!),
    );
    const job = await completedJob(stack.services.queues.calls, callId);
    expect(job.attemptsMade).toBe(2); // one failure, then the success
    expect(job.stacktrace).toHaveLength(1);
    expect(fake.calls.filter((c) => (c.metadata as any)?.call_id === callId)).toHaveLength(1);
  });

  const dialTo = (toNumber: string) =>
    firm.client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug: firm.slug });
  const lookupsFor = (callId: string) =>
    fake.requestsTo('list-calls').filter((r) => r.body?.filter_criteria?.metadata?.[0]?.value === callId);
  const decisionsOf = async (callId: string) =>
    (
      await stack.services.mongo.db
        .collection('dial_decisions')
        .find({ call_id: callId })
        .sort({ at: 1, _id: 1 })
        .toArray()
    ).map((d) => [d._id, d.answer, d.reason]);
  /** A call whose first dial fails with a 500 answered 4 s late: the number is listed meanwhile. */
  async function failedDialThenListed(to: string, atRetell?: (callId: string) => void): Promise<string> {
    fake.script('create-phone-call', { status: 500, delayMs: 4000 });
    const created = await dialTo(to);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const callId = created.body.call_id as string;
    await eventually(async () => expect(createRequestsFor(callId)).toHaveLength(1));
    atRetell?.(callId);
    const listed = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [to] });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    return callId;
  }

  it('a number put on the do-not-call list between a failed dial and its retry is not dialled by the retry', async () => {
    const callId = await failedDialThenListed('+14155550124');
    const call = await waitForCall(firm.client, callId, (c) => c.status === 'error');
    expect(call.disconnection_reason).toBe('dial_blocked');
    expect(await callsOf(stack).findOne({ _id: callId })).toMatchObject({
      dial_block_reason: 'dnc',
      provider_call_id: null,
      dial: { state: 'skipped' },
    });
    // The retry asked Retell whether the failed dial had made a call (it had not), and dialled nothing.
    expect(lookupsFor(callId)).toHaveLength(1);
    expect(createRequestsFor(callId)).toHaveLength(1);
    // The audit: the first attempt's allow, then the retry's block.
    expect(await decisionsOf(callId)).toEqual([
      [`${callId}:dial`, 'allow', null],
      [`${callId}:dial:block`, 'block', 'dnc'],
    ]);
  });

  it('a failed dial that had reached Retell goes on though its number was listed since: linked, not dialled again', async () => {
    const callId = await failedDialThenListed('+14155550125', (ours) => {
      // What Retell holds although it answered 500: a call carrying our call id.
      const made = fake.calls.find((c) => (c.metadata as { call_id?: string } | undefined)?.call_id);
      fake.calls.push({
        ...made!,
        call_id: `retell_${ours}`,
        to_number: '+14155550125',
        metadata: { call_id: ours, firm: firm.slug, agent_id: agentId },
      });
    });
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: callId }))?.provider_call_id).toBe(`retell_${callId}`),
    );
    const stored = await callsOf(stack).findOne({ _id: callId });
    expect(stored).toMatchObject({ status: 'registered', dial: { state: 'done' } });
    expect(stored?.dial_block_reason).toBeUndefined();
    expect(lookupsFor(callId)).toHaveLength(1);
    expect(createRequestsFor(callId)).toHaveLength(1);
    expect(await decisionsOf(callId)).toEqual([[`${callId}:dial`, 'allow', null]]);
  });

  it('a 4xx from Retell ends the call as error without retrying', async () => {
    fake.script('create-phone-call', { status: 422, body: retellError('to_number is not reachable') });
    const created = await createCall();
    const call = await waitForCall(firm.client, created.body.call_id, (c) => c.status === 'error');
    expect(call.disconnection_reason).toBe('dial_failed');
    const job = await stack.services.queues.calls.getJob(created.body.call_id);
    await eventually(async () => expect(await job!.getState()).toBe('failed'));
    expect(createRequestsFor(created.body.call_id)).toHaveLength(1);
  });
});
