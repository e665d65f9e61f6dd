// `npx tsx bench/campaign-job-memory.ts`: the Redis memory one waiting campaign-call job holds, as
// the fan-out adds them (addBulk of 500, each with its job id, priority and the queues' default
// options, in the `campaigns` queue's tagged prefix as on a cluster): used_memory over
// BENCH_JOBS (5,000) jobs. An input of docs/performance.md#one-firm-with-50000-leads-100-firms-at-once
// (what a campaign's fan-out puts on the master holding the queue's slot).
// Uses REDIS_URL when set (the jobs are removed at the end), else a local redis-server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { DEFAULT_JOB_OPTIONS, EVENTS_STREAM_MAX_LEN, QUEUE } from '../jobs/queues.js';
import { redisKeys } from '../core/platform/redis-keys.js';
import { ensureRedisServer, startRedis } from '../scripts/local/services.js';
import { knob, say } from './lib/measure.js';

const JOBS = knob('BENCH_JOBS', 5000, 100_000);

async function main(): Promise<void> {
  let url = process.env.REDIS_URL;
  let stop = async (): Promise<void> => {};
  if (url === undefined) {
    const dir = await mkdtemp(join(tmpdir(), 'bench-job-memory-'));
    const server = await startRedis(await ensureRedisServer(say), dir);
    url = `redis://127.0.0.1:${server.port}`;
    stop = async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const keys = redisKeys({ queuePrefix: `jobmem${Date.now()}`, redisCluster: true });
  const queue = new Queue(QUEUE.campaigns, {
    connection: redis,
    prefix: keys.queuePrefix(QUEUE.campaigns),
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
    streams: { events: { maxLen: EVENTS_STREAM_MAX_LEN } },
  });
  try {
    await queue.add('warm-up', {});
    const used = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? NaN);
    const before = await used();
    const campaignId = 'cmp_0123456789abcdef01234567';
    for (let from = 0; from < JOBS; from += 500) {
      const n = Math.min(500, JOBS - from);
      await queue.addBulk(
        Array.from({ length: n }, (_, i) => {
          const phone = `+1415${String(2_000_000 + from + i)}`;
          return {
            name: 'campaign-call',
            data: { campaignId, firm: 'smith-and-jones-law', phone, attempt: 1 },
            opts: { jobId: `cc|${campaignId}|${phone}|1`, priority: from + i + 1 },
          };
        }),
      );
    }
    const after = await used();
    process.stdout.write(
      `${JOBS} waiting campaign-call jobs: ${((after - before) / 2 ** 20).toFixed(1)} MiB, ${((after - before) / JOBS).toFixed(0)} bytes a job\n`,
    );
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    redis.disconnect();
    await stop();
  }
}

void main().catch((err: unknown) => {
  say(`failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
