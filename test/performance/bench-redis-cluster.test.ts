// The bench on a Redis Cluster (`npm run bench -- --redis=cluster`): its queues are the service's
// (tagged per queue, as REDIS_CLUSTER=true names them) and its Redis figures are read from every
// master, so the commands a queue's jobs cost are counted on the master of the queue's slot
// (CLUSTER KEYSLOT), and nowhere else. The scenario itself (thousands of jobs, 1–4 worker
// processes) is the bench's; this is the counting, on three masters and a few jobs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureRedisServer } from '../../scripts/local/redis.js';
import { startRedisCluster, type LocalRedisCluster } from '../../scripts/local/redis-cluster.js';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { readyMasters } from '../../core/platform/redis-cluster.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createQueues, QUEUE, type Queues } from '../../jobs/queues.js';
import { commandStatsByMaster, delta, perMaster } from '../../bench/lib/redis-stats.js';

let dir: string | undefined;
let local: LocalRedisCluster | undefined;
let redis: RedisClient | undefined;
let queues: Queues | undefined;
const keys = redisKeys({ queuePrefix: 'benchcount', redisCluster: true });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bench-redis-cluster-'));
  local = await startRedisCluster(await ensureRedisServer(() => {}), dir);
  redis = createRedis({ url: local.url, cluster: true }, 'producer');
  await readyMasters(redis);
  queues = createQueues(redis, keys, () => {});
  await queues[QUEUE.callEffects].waitUntilReady();
});

afterAll(async () => {
  if (queues) await Promise.all(Object.values(queues).map((q) => q.close()));
  redis?.disconnect();
  await local?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The master (`host:port`) serving the slot of `key`, as the cluster itself says. */
async function masterOf(key: string): Promise<string> {
  const node = (await readyMasters(redis!))[0]!;
  const slot = Number(await node.cluster('KEYSLOT', key));
  const ranges = await node.cluster('SLOTS');
  const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2];
  if (owner === undefined) throw new Error(`no master serves slot ${slot}`);
  return `${owner[0]}:${owner[1]}`;
}

describe('the bench on a Redis Cluster', () => {
  it("counts each master's commands: a queue's adds on its slot's master, none on the others", async () => {
    const queue = queues![QUEUE.callEffects];
    const home = await masterOf(`${keys.queuePrefix(QUEUE.callEffects)}:wait`);
    const before = await commandStatsByMaster(redis!);
    expect(before.size).toBe(3);
    await queue.addBulk(
      Array.from({ length: 12 }, (_, i) => ({ name: 'count', data: { i }, opts: { jobId: `count-${i}` } })),
    );
    for (let i = 0; i < 8; i++) await queue.add('count', { i }, { jobId: `one-${i}` });
    const served = delta(before, await commandStatsByMaster(redis!));

    expect([...served.keys()]).toContain(home);
    // 20 jobs: BullMQ's add script once each (EVAL the first time a node sees it, then EVALSHA),
    // all on the queue's master.
    const scripts = (counts: Map<string, number>) => (counts.get('evalsha') ?? 0) + (counts.get('eval') ?? 0);
    expect(scripts(served.get(home)!)).toBeGreaterThanOrEqual(20);
    for (const [node, counts] of served) {
      if (node !== home) expect(scripts(counts)).toBe(0);
    }
    // The summary gives every master its line, the queue's master the most.
    const line = perMaster(served, 20, 1);
    expect(line.match(/127\.0\.0\.1:\d+ \d+ a call/g)).toHaveLength(3);
    const share = Number(
      new RegExp(`${home.replace(/\./g, '\\.')} \\d+ a call, \\d+/s, (\\d+) %`).exec(line)?.[1],
    );
    expect(share).toBeGreaterThan(50);
  });
});
