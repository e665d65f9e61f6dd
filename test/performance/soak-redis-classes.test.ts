// The soak's classes of Redis keys (bench/soak/redis-classes.ts): a queue's delayed set exists
// only while the queue has a delayed job, as its wait list exists only while it has a waiting
// one, so it is in flight, not "other" (which the soak judges flat): the hour of 1d891ea failed
// `redis_keys_other` at its last sample, taken once the backlog had drained, 48 against 51.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { Worker } from 'bullmq';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createQueues, QUEUE, type Queues } from '../../jobs/queues.js';
import { classifyRedis } from '../../bench/soak/redis-classes.js';
import { eventually } from '../helpers/eventually.js';
import { rand } from '../helpers/stack.js';

const prefix = `soakclasses${rand(4)}`;
let redis: Redis;
let queues: Queues;

beforeAll(async () => {
  // A plain single-node client, as the soak's sampler reads its Redis with, on a logical database
  // of its own: the classes count every key (SCAN), and other test files use database 0 meanwhile.
  const url = new URL(inject('redisUrl'));
  url.pathname = '/11';
  redis = new Redis(url.toString(), { maxRetriesPerRequest: null });
  queues = createQueues(redis, redisKeys({ queuePrefix: prefix, redisCluster: false }), () => {});
  await queues[QUEUE.callEffects].waitUntilReady();
  expect(redis.options.db).toBe(11);
});

afterAll(async () => {
  if (queues !== undefined) await Promise.all(Object.values(queues).map((q) => q.close()));
  if (redis !== undefined) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
});

describe('the soak’s classes of Redis keys', () => {
  it('counts a queue’s delayed set in flight while it holds a job, and nothing is left in "other" when it goes', async () => {
    const queue = queues[QUEUE.callEffects];
    // A queue that has had a job: its id counter and event stream exist, as in the soak.
    await (await queue.add('soak-classes', {}, { jobId: `first-${rand(3)}` })).remove();
    const idle = await classifyRedis(redis, prefix, new Map());
    const job = await queue.add('soak-classes', {}, { delay: 3_600_000, jobId: `delayed-${rand(3)}` });
    const delayedSet = `${prefix}:${QUEUE.callEffects}:delayed`;
    expect(await redis.exists(delayedSet)).toBe(1);

    const kept = new Map<string, number>();
    const busy = await classifyRedis(redis, prefix, kept);
    expect(kept.has(delayedSet), 'the delayed set among the kept keys').toBe(false);
    expect(kept.has(`${prefix}:${QUEUE.callEffects}:${job.id}`), 'the delayed job among the kept keys').toBe(
      false,
    );
    expect(busy.keys.other).toBe(idle.keys.other);
    expect(busy.keys.inFlight).toBe(idle.keys.inFlight + 1);
    expect(busy.keys.scheduled).toBe(idle.keys.scheduled + 1);

    await job.remove();
    expect(await redis.exists(delayedSet)).toBe(0);
    const after = await classifyRedis(redis, prefix, new Map());
    expect(after.keys).toEqual(idle.keys);
  });

  it('counts a job that finished during the pass as retained, as a pass after it does', async () => {
    const queue = queues[QUEUE.callEffects];
    const job = await queue.add('soak-classes', {}, { jobId: `raced-${rand(3)}` });
    const record = `${prefix}:${QUEUE.callEffects}:${job.id}`;
    const kept = new Map<string, number>();
    // The job waits when the queues' sets are first read, and is finished before its key is looked at.
    const raced = await classifyRedis(redis, prefix, kept, async () => {
      const worker = new Worker(queue.name, async () => 'done', {
        connection: redis,
        prefix: queue.opts.prefix,
      });
      try {
        await eventually(async () => expect(await queue.getJobState(job.id!)).toBe('completed'));
      } finally {
        await worker.close();
      }
    });
    expect(await queue.getJobState(job.id!)).toBe('completed');
    expect(kept.has(record), 'the finished job among the kept keys').toBe(true);
    const after = await classifyRedis(redis, prefix, new Map());
    expect(raced.keys.retained).toBe(after.keys.retained);
    expect(raced.keys.inFlight).toBe(after.keys.inFlight);
  });
});
