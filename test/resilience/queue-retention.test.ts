// A queue's finished history is not cut by one of its jobs. BullMQ trims a queue's whole completed
// set to the count of the job that just finished: a `dnc-sweep` kept "the last 20" on the
// campaigns queue cut the campaign calls' last 100 to 20 after every opt-out (the soak's one-sample
// dip in kept keys). Real Redis, real BullMQ, the service's own job definitions and queue options.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { enqueue, enqueueBulk } from '../../jobs/define.js';
import { createQueues, DEFAULT_JOB_OPTIONS, QUEUE, type Queues } from '../../jobs/queues.js';
import { JOBS } from '../../jobs/table.js';
import { eventually } from '../helpers/eventually.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';

let redis: PrivateRedis;
let client: RedisClient;
let workerConnection: RedisClient;
let queues: Queues;
let worker: Worker;

const keys = redisKeys({ queuePrefix: 'bull', redisCluster: false });
const kept = (DEFAULT_JOB_OPTIONS.removeOnComplete as { count: number }).count;

beforeAll(async () => {
  redis = await startPrivateRedis();
  client = createRedis({ url: redis.url }, 'producer');
  workerConnection = createRedis({ url: redis.url }, 'worker');
  await client.ping(); // enqueue refuses before the connection is ready
  queues = createQueues(client, keys, () => {});
  // Every job of the campaigns queue completes at once: only retention is under test.
  worker = new Worker(QUEUE.campaigns, async () => 'done', {
    connection: workerConnection,
    prefix: keys.queuePrefix(QUEUE.campaigns),
    concurrency: 20,
  });
});
afterAll(async () => {
  await worker?.close();
  await queues?.[QUEUE.campaigns].close();
  client?.disconnect();
  workerConnection?.disconnect();
  await redis?.remove();
});

const completed = async () => (await queues[QUEUE.campaigns].getJobCounts('completed')).completed ?? 0;

describe('the campaigns queue after a DNC sweep', () => {
  it('keeps the campaign calls it kept: the sweep finishing trims nothing', async () => {
    await enqueueBulk(
      queues,
      JOBS.campaignCall,
      Array.from({ length: kept + 30 }, (_, i) => ({
        data: {
          campaignId: 'cmp_retention',
          firm: 'firm-a',
          phone: `+1415555${String(i).padStart(4, '0')}`,
          attempt: 1,
        },
      })),
    );
    await eventually(async () => expect(await completed()).toBe(kept), 20_000);

    await enqueue(queues, JOBS.dncSweep, {
      firm: 'firm-a',
      phones: ['+14155550000'],
      batch: 'dncsw_retention',
    });
    await eventually(async () => {
      const sweep = await queues[QUEUE.campaigns].getJob('dnc|firm-a|dncsw_retention');
      expect(await sweep?.getState()).toBe('completed');
    }, 20_000);
    expect(await completed()).toBe(kept);
    const calls = (await queues[QUEUE.campaigns].getCompleted(0, -1)).filter(
      (j) => j.name === 'campaign-call',
    );
    expect(calls.length).toBe(kept - 1);
  });
});
