// create-outbound-call's take-back when the gate's record fails beside the call's insert
// (core/domain/calls/calls.ts, registerOutboundCall): the record is removed only once its insert
// has answered, so a refused request leaves no call behind whichever of the two answers first.
import type { Collection, Db, Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAgent } from '../../core/domain/agents/agents.js';
import { registerOutboundCall } from '../../core/domain/calls/calls.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { callsOf, createAgent } from './support.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

/**
 * `db` itself (every command goes to the real store), except that the calls collection's
 * insertOne is sent only once the collection's deleteOne has been answered, or else `wait` has
 * settled: the race's worst order, made to happen every time. `landed` settles once the insert has.
 */
function insertLate(db: Db, wait: () => Promise<unknown>): { db: Db; landed: Promise<unknown> } {
  let deleted!: () => void;
  const deleteAnswered = new Promise<void>((resolve) => (deleted = resolve));
  let landedNow!: (v: unknown) => void;
  const landed = new Promise((resolve) => (landedNow = resolve));
  const late = <T extends Document>(real: Collection<T>): Collection<T> =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'insertOne') {
          return async (...args: unknown[]) => {
            await Promise.race([deleteAnswered, wait()]);
            const inserting = (target.insertOne as (...a: unknown[]) => Promise<unknown>)(...args);
            inserting.then(landedNow, landedNow);
            return inserting;
          };
        }
        if (prop === 'deleteOne') {
          return async (...args: unknown[]) => {
            const answer = await (target.deleteOne as (...a: unknown[]) => Promise<unknown>)(...args);
            deleted();
            return answer;
          };
        }
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  const proxied = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'collection') return Reflect.get(target, prop, receiver) as unknown;
      return (name: string, ...rest: unknown[]) => {
        const real = (target.collection as (...args: unknown[]) => Collection)(name, ...rest);
        return name === COLLECTIONS.calls ? late(real) : real;
      };
    },
  });
  return { db: proxied, landed };
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
