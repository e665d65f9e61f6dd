// What the place-call job asks of the call's document (core/domain/calls/call-dialing.ts), counted
// by the driver's command monitoring: it reads the call once, and the dial's first look starts
// from that read (the effect recorder's "from what was seen"): the mark is a write whose filter is
// the dial as read, with no second read of the call under its lock. The job's function runs here
// with the test's own client; the voice provider is the stack's simulator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { createFirm, freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import { placeOutboundCall } from '../../core/domain/calls/call-dialing.js';
import { callsCollection, newCallRecord } from '../../core/domain/calls/calls.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';

let stack: Stack;
let commands: { name: string; collection: string }[] = [];

beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({ env: { MONGODB_URI: uri.toString() } });
  stack.services.mongo.client.on('commandStarted', (e: CommandStartedEvent) => {
    const target: unknown = e.command[e.commandName];
    commands.push({ name: e.commandName, collection: typeof target === 'string' ? target : '' });
  });
});
afterAll(() => stack?.stop());

/** A new outbound call of a new firm, not dialled yet, as create-outbound-call stores it. */
async function newCall() {
  const firm = await createFirm(stack);
  const call = newCallRecord({
    callId: `call_${rand(10)}`,
    firm: firm.slug,
    agent_id: null,
    direction: 'outbound',
    from_number: '+14155550100',
    to_number: `+1415555${String(Math.floor(Math.random() * 9000) + 1000)}`,
    dynamic_variables: {},
    provider: stack.services.voice.name,
    provider_call_id: null,
    dialled: false,
  });
  await callsCollection(stack.services.mongo.db).insertOne(call);
  return call;
}

const ofCalls = (name: string) =>
  commands.filter((c) => c.name === name && c.collection === COLLECTIONS.calls);

describe('the place-call job', () => {
  it("reads the call once: its dial is marked from that read, then settled with the provider's id", async () => {
    const call = await newCall();
    commands = [];
    const result = await placeOutboundCall(stack.services, call._id, { lastAttempt: false }, `w_${rand(6)}`);
    expect(result.outcome).toBe('placed');
    expect(ofCalls('find')).toHaveLength(1);
    // The dial's mark and its settle (with the provider's id): no read between them and the job's.
    expect(ofCalls('update')).toHaveLength(2);
    const stored = await callsCollection(stack.services.mongo.db).findOne({ _id: call._id });
    expect(stored?.dial).toMatchObject({ state: 'done', attempts: 1 });
    expect(stored?.provider_call_id).toEqual(expect.any(String));
  });
});
