// create-outbound-call's take-back when the gate's record fails beside the call's insert
// (core/domain/calls/calls.ts, registerOutboundCall): the record is removed only once its insert
// has answered, so a refused request leaves no call behind whichever of the two answers first.
import type { Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAgent } from '../../core/domain/agents/agents.js';
import { registerOutboundCall } from '../../core/domain/calls/calls.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { aroundCalls } from '../helpers/store-timing.js';
import { callsOf, createAgent } from './support.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

/**
 * `db`, except that the calls collection's insertOne is sent only once its deleteOne has been
 * answered, or else `wait` has settled: the race's worst order, made to happen every time.
 * `landed` settles once the insert has.
 */
function insertLate(db: Db, wait: () => Promise<unknown>): { db: Db; landed: Promise<unknown> } {
  let deleted!: () => void;
  const deleteAnswered = new Promise<void>((resolve) => (deleted = resolve));
  let landedNow!: (v: unknown) => void;
  const landed = new Promise((resolve) => (landedNow = resolve));
  const late = aroundCalls(db, COLLECTIONS.calls, {
    insertOne:
      (real) =>
      async (...args) => {
        await Promise.race([deleteAnswered, wait()]);
        const inserting = real(...args);
        inserting.then(landedNow, landedNow);
        return inserting;
      },
    deleteOne:
      (real) =>
      async (...args) => {
        const answer = await real(...args);
        deleted();
        return answer;
      },
  });
  return { db: late, landed };
}

describe('create-outbound-call: the gate’s record fails while the call is being inserted', () => {
  it('the call record is removed after its insert lands, not before: no call is left behind', async () => {
    const made = await createFirm(stack);
    const agentId = await createAgent(made.client, made.slug);
    const db = stack.services.mongo.db;
    const firm = (await getFirm(db, made.slug))!;
    const agent = (await findAgent(db, agentId))!;

    // Without a delete, the insert goes a moment after the record has failed.
    let recordFailed!: () => void;
    const failedRecord = new Promise<void>((resolve) => (recordFailed = resolve));
    const late = insertLate(db, () => failedRecord.then(() => new Promise((r) => setTimeout(r, 200))));
    const services = { ...stack.services, mongo: { ...stack.services.mongo, db: late.db } };

    const refused = new Error('the dial decision could not be recorded');
    await expect(
      registerOutboundCall(services, {
        firm,
        agent,
        toNumber: '+14155550123',
        gate: async () => ({
          scheduled: null,
          record: async () => {
            recordFailed();
            throw refused;
          },
        }),
      }),
    ).rejects.toBe(refused);

    await late.landed;
    expect(await callsOf(stack).countDocuments({ firm: made.slug })).toBe(0);
    expect(await stack.services.queues.calls.getJobCounts()).toMatchObject({ waiting: 0, delayed: 0 });
  });
});
