// What a provider's call event asks of the call's document (workers/processors/calls.ts,
// core/domain/calls/call-events.ts), counted by the driver's command monitoring: the usual case —
// an event that raises the call's status, an analysis for a call already finished — is one
// findAndModify whose filter makes the checks a read made; everything else (a late or repeated
// event, an analysis that also finishes the call, a webhook ahead of the dial's record) is applied
// from a read as before, and the filter that did not match wrote nothing. The call-event
// processor runs here with the test's own client; the stack's worker runs what it enqueues.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import type { CommandStartedEvent } from 'mongodb';
import { createFirm, freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import { callEvent } from '../../workers/processors/calls.js';
import { applyNamedCallEvent } from '../../core/domain/calls/call-events.js';
import type { CallEventJob, CallEventName } from '../../jobs/calls.js';
import { callsCollection, newCallRecord, type CallDoc } from '../../core/domain/calls/calls.js';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { retellCallAnalyzed } from '../webhooks/support.js';

let stack: Stack;
let commands: { name: string; collection: string }[] = [];

beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({ workers: true, env: { MONGODB_URI: uri.toString() } });
  stack.services.mongo.client.on('commandStarted', (e: CommandStartedEvent) => {
    const target: unknown = e.command[e.commandName];
    commands.push({ name: e.commandName, collection: typeof target === 'string' ? target : '' });
  });
});
afterAll(() => stack?.stop());

/** An outbound call of a new firm as the dial left it: placed, its provider's id recorded (or not yet). */
async function placedCall(providerCallId: string | null = `prov_${rand(8)}`) {
  const firm = await createFirm(stack);
  const call = newCallRecord({
    callId: `call_${rand(10)}`,
    firm: firm.slug,
    agent_id: null,
    direction: 'outbound',
    from_number: '+14155550100',
    to_number: '+14155550142',
    dynamic_variables: {},
    provider: 'retell',
    provider_call_id: providerCallId,
    dialled: providerCallId !== null,
  });
  await callsCollection(stack.services.mongo.db).insertOne(call);
  return { firm: firm.slug, call, providerCallId: providerCallId ?? `prov_${rand(8)}` };
}

type Placed = Awaited<ReturnType<typeof placedCall>>;

/** The provider's event about the call, run by the call-event processor; the call's commands it sent. */
async function deliver(placed: Placed, event: CallEventName, callStatus: 'ongoing' | 'ended' = 'ended') {
  const body = retellCallAnalyzed({
    ourCallId: placed.call._id,
    providerCallId: placed.providerCallId,
    callStatus,
  });
  const data: CallEventJob = {
    firm: placed.firm,
    event,
    call: snapshotProviderCall(body.call as unknown as Parameters<typeof snapshotProviderCall>[0]),
    received_at: Date.now(),
  };
  commands = [];
  const result = (await callEvent(
    { data } as Job<CallEventJob>,
    {
      services: stack.services,
    } as Parameters<typeof callEvent>[1],
  )) as { advanced: boolean; status: string };
  const sent = commands.filter((c) => c.collection === COLLECTIONS.calls).map((c) => c.name);
  const stored = (await callsCollection(stack.services.mongo.db).findOne({
    _id: placed.call._id,
  })) as CallDoc;
  return { result, sent, stored, body };
}

describe("a provider's call event, on the call's document", () => {
  it('call_started, call_ended, then call_analyzed: one findAndModify each, each applied', async () => {
    const placed = await placedCall();
    const started = await deliver(placed, 'call_started', 'ongoing');
    expect(started.sent).toEqual(['findAndModify']);
    expect(started.result).toMatchObject({ advanced: true, status: 'ongoing' });
    expect(started.stored).toMatchObject({ status: 'ongoing', finished: false });

    const ended = await deliver(placed, 'call_ended');
    expect(ended.sent).toEqual(['findAndModify']);
    expect(ended.result).toMatchObject({ advanced: true, status: 'ended' });
    expect(ended.stored).toMatchObject({
      status: 'ended',
      finished: true,
      transcript: ended.body.call.transcript,
      end_timestamp: ended.body.call.end_timestamp,
      disconnection_reason: 'user_hangup',
    });
    expect(ended.stored.call_analysis).toBeNull();

    const analysed = await deliver(placed, 'call_analyzed');
    expect(analysed.sent).toEqual(['findAndModify']);
    expect(analysed.result).toMatchObject({ advanced: false, status: 'ended' });
    expect(analysed.stored.call_analysis).toEqual(analysed.body.call.call_analysis);
    expect(analysed.stored.status_rank).toBe(ended.stored.status_rank);
  });

  it('gives back the call as written: what the rest of the job (the hook, the events) goes on with', async () => {
    const placed = await placedCall();
    const body = retellCallAnalyzed({ ourCallId: placed.call._id, providerCallId: placed.providerCallId });
    const job: CallEventJob = {
      firm: placed.firm,
      event: 'call_ended',
      call: snapshotProviderCall(body.call as unknown as Parameters<typeof snapshotProviderCall>[0]),
      received_at: Date.now(),
    };
    const applied = await applyNamedCallEvent(stack.services.mongo.db, job, placed.call._id);
    expect(applied?.advanced).toBe(true);
    expect(applied?.call).toEqual(
      await callsCollection(stack.services.mongo.db).findOne({ _id: placed.call._id }),
    );
    // Again: it no longer raises the status, so nothing matches and nothing is written.
    expect(await applyNamedCallEvent(stack.services.mongo.db, job, placed.call._id)).toBeNull();
    expect(await callsCollection(stack.services.mongo.db).findOne({ _id: placed.call._id })).toEqual(
      applied?.call,
    );
  });

  it('a call_started after the call ended: the filter does not match, the call is read and left as it is', async () => {
    const placed = await placedCall();
    await deliver(placed, 'call_ended');
    const before = await callsCollection(stack.services.mongo.db).findOne({ _id: placed.call._id });
    const late = await deliver(placed, 'call_started', 'ongoing');
    expect(late.sent).toEqual(['findAndModify', 'find']);
    expect(late.result).toMatchObject({ advanced: false, status: 'ended' });
    expect(late.stored).toEqual(before);
  });

  it('a repeated call_ended changes nothing: no write past the filter', async () => {
    const placed = await placedCall();
    const first = await deliver(placed, 'call_ended');
    const again = await deliver(placed, 'call_ended');
    expect(again.sent).toEqual(['findAndModify', 'find']);
    expect(again.result).toMatchObject({ advanced: false });
    expect(again.stored).toEqual(first.stored);
  });

  it('a call_analyzed before the call_ended finishes the call and stores the analysis, from a read', async () => {
    const placed = await placedCall();
    await deliver(placed, 'call_started', 'ongoing');
    const analysed = await deliver(placed, 'call_analyzed');
    expect(analysed.sent).toEqual(['findAndModify', 'find', 'update']);
    expect(analysed.result).toMatchObject({ advanced: true, status: 'ended' });
    expect(analysed.stored).toMatchObject({ status: 'ended', finished: true });
    expect(analysed.stored.call_analysis).toEqual(analysed.body.call.call_analysis);
  });

  it("a webhook ahead of the dial's record: read, the provider's id recorded, then the event applied", async () => {
    const placed = await placedCall(null);
    const started = await deliver(placed, 'call_started', 'ongoing');
    expect(started.sent).toEqual(['findAndModify', 'find', 'update', 'update']);
    expect(started.stored).toMatchObject({
      status: 'ongoing',
      provider_call_id: placed.providerCallId,
      dial: { state: 'done', result: { provider_call_id: placed.providerCallId } },
    });
  });

  it("another firm's event naming the call: nothing written to it", async () => {
    const placed = await placedCall();
    const other = await createFirm(stack);
    const before = await callsCollection(stack.services.mongo.db).findOne({ _id: placed.call._id });
    await deliver({ ...placed, firm: other.slug }, 'call_ended');
    expect(await callsCollection(stack.services.mongo.db).findOne({ _id: placed.call._id })).toEqual(before);
  });
});
