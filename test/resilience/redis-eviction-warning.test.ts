// BullMQ loses jobs when Redis evicts keys: every process warns at start unless the policy is
// noeviction. Checked against a real Redis whose policy the test changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { warnUnlessNoEviction } from '../../core/platform/redis.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

let server: PrivateRedis;
let redis: Redis;

beforeAll(async () => {
  // A private Redis: the test changes its policy, which must not touch the shared one.
  server = await startPrivateRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.remove();
});

describe('Redis maxmemory-policy check', () => {
  it('warns, naming the policy, when Redis may evict keys', async () => {
    await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const { log, lines } = capturingLogger();
    await warnUnlessNoEviction(redis, log);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        policy: 'allkeys-lru',
        msg: expect.stringContaining('noeviction'),
      }),
    ]);
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
  });

  it('stays quiet with noeviction', async () => {
    const { log, lines } = capturingLogger();
    await warnUnlessNoEviction(redis, log);
    expect(lines).toEqual([]);
  });
});
