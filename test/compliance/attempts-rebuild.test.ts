// The firm's rebuild of its dial attempts after Redis lost its data (frequency.ts,
// rebuildFirmAttempts) sets the firm's ready mark only when the attempts it put back are all still
// there: should Redis lose its data again while the rebuild runs (a Redis restarting twice in a
// row), the numbers it had put back are gone, and a mark set then would vouch for emptied counts
// (each such number could be dialled up to the cap again within its 24 h).
import type { FindCursor } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import {
  dialDecisionsCollection,
  type DialDecisionDoc,
} from '../../core/domain/compliance/dial-decisions.js';
import { rebuildFirmAttempts } from '../../core/domain/compliance/frequency.js';
import { aroundCalls } from '../helpers/store-timing.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

/** A dial attempt as the gate records it (stage dial, answer allow). */
function attempt(firm: string, phone: string, callId: string, at: number): DialDecisionDoc {
  return {
    _id: `${callId}:dial`,
    firm,
    phone,
    call_id: callId,
    campaign_id: null,
    stage: 'dial',
    answer: 'allow',
    reason: null,
    message: null,
    retry_at: null,
    rules_version: 'test',
    region: null,
    limited_by: [],
    zones: [],
    attempts: 1,
    attempts_cap: 3,
    consent: null,
    at: new Date(at),
  };
}

describe('the firm’s rebuild of its dial attempts', () => {
  it('does not mark the attempts complete when Redis lost its data again while it ran', async () => {
    const { slug } = await createFirm(stack);
    const keys = redisKeys(stack.config);
    const now = clock.now();
    // More attempts than one of the rebuild's batches (1,000), so that it puts a batch back
    // before it has read them all: 1,001 numbers dialled once in the last hours.
    const phones = Array.from({ length: 1001 }, (_, i) => `+1212${String(5550000 + i).padStart(7, '0')}`);
    await dialDecisionsCollection(stack.services.mongo.db).insertMany(
      phones.map((phone, i) => attempt(slug, phone, `call_rebuild_${slug}_${i}`, now - 3_600_000 + i)),
    );

    // What a Redis restarted without its data holds of the firm's pacing: nothing.
    const loseRedisData = async () => {
      const pattern = keys.dialAttemptsReady(slug).replace(/attempts-ready$/, '*');
      const found = await stack.services.redis.keys(pattern);
      if (found.length > 0) await stack.services.redis.del(...found);
    };
    // The rebuild reads the decisions through the real cursor; once it has put its first batch
    // back (it asks for the 1,001st decision), Redis loses its data again.
    let read = 0;
    const db = aroundCalls(stack.services.mongo.db, COLLECTIONS.dialDecisions, {
      // The real find, not awaited (it answers a cursor): its cursor, read through as it is.
      find:
        (real) =>
        (...args) => {
          const cursor = real(...args) as unknown as FindCursor<DialDecisionDoc>;
          const watched: FindCursor<DialDecisionDoc> = new Proxy(cursor, {
            get(target, prop, receiver) {
              if (prop === 'batchSize') {
                return (size: number) => {
                  target.batchSize(size);
                  return watched;
                };
              }
              if (prop === Symbol.asyncIterator) {
                return async function* () {
                  for await (const doc of target) {
                    if (read === 1000) await loseRedisData();
                    read += 1;
                    yield doc;
                  }
                };
              }
              return Reflect.get(target, prop, receiver) as unknown;
            },
          });
          return watched as unknown as Promise<unknown>;
        },
    });
    const services = { ...stack.services, mongo: { ...stack.services.mongo, db } };

    await rebuildFirmAttempts(services, slug).catch(() => undefined);
    expect(read).toBe(1001);
    // The numbers of the first batch were put back, then lost: no mark may vouch for their keys.
    const counted = await Promise.all(
      phones.map((phone) => stack.services.redis.zcard(keys.dialAttempts(slug, phone))),
    );
    expect(counted.filter((n) => n === 0).length).toBeGreaterThan(0);
    expect(await stack.services.redis.exists(keys.dialAttemptsReady(slug))).toBe(0);

    // A rebuild that runs to its end undisturbed marks them, every number's attempt back.
    await rebuildFirmAttempts(stack.services, slug);
    expect(await stack.services.redis.exists(keys.dialAttemptsReady(slug))).toBe(1);
    const after = await Promise.all(
      phones.map((phone) => stack.services.redis.zcard(keys.dialAttempts(slug, phone))),
    );
    expect(after.every((n) => n === 1)).toBe(true);
  });
});
