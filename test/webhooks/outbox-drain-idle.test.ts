// The worker's outbox drain (core/domain/deliveries/delivery-outbox.ts) runs every second in every
// worker process. With the outbox empty, the usual case, it looks and takes no lock: taking and
// releasing the drain's lock each second was two Redis round trips a second per process for
// nothing, and a lock held at any instant by a process with no work to do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { drainOutbox, type OutboxEntry } from '../../core/domain/deliveries/delivery-outbox.js';
import { commandCalls, startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';

let redis: PrivateRedis;
let direct: RedisClient;
let stack: Stack;

beforeAll(async () => {
  // A Redis of its own: its command counts are this file's alone.
  redis = await startPrivateRedis();
  direct = createRedis({ url: redis.url }, 'producer');
  stack = await startStack({ env: { REDIS_URL: redis.url } });
});
afterAll(async () => {
  direct?.disconnect();
  await stack?.stop();
  await redis?.remove();
});

const setsSoFar = (): Promise<number> => commandCalls(direct, 'set');

describe('the outbox drain', () => {
  it('takes no lock while the outbox is empty, and takes it to move an entry', async () => {
    const outbox = stack.services.mongo.db.collection<OutboxEntry>(COLLECTIONS.webhookOutbox);
    expect(await outbox.countDocuments({})).toBe(0);
    const before = await setsSoFar();
    for (let i = 0; i < 5; i++) expect(await drainOutbox(stack.services)).toBe(0);
    expect(await setsSoFar()).toBe(before);

    // An entry kept while Redis was down: the drain takes its lock and moves it into its queue.
    const callId = `call_${rand(8)}`;
    await outbox.insertOne({
      _id: `${Date.now()}-0001`,
      job: 'callEvent',
      firm: `firm-${rand(6)}`,
      keys: [callId],
      payload: JSON.stringify({ firm: 'x', event: 'call_started', call: { call_id: callId } }),
      stored_at: new Date(),
    });
    expect(await drainOutbox(stack.services)).toBe(1);
    expect(await setsSoFar()).toBeGreaterThan(before);
    expect(await outbox.countDocuments({})).toBe(0);
  });
});
