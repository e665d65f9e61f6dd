// A record lock whose holder ends while Redis is away (its request answered 503) is released once
// Redis is back, not left to bar the record's next writer — a client's retry of that request —
// until it expires (a campaign's lock lives two minutes).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { eventually } from '../helpers/eventually.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';

let redis: PrivateRedis;
let relay: TcpRelay;
/** The web process's connection (fails fast while Redis is away), through the relay. */
let web: RedisClient;
/** A direct look at what Redis holds. */
let direct: RedisClient;

beforeAll(async () => {
  redis = await startPrivateRedis();
  relay = await startTcpRelay(new URL(redis.url));
  web = createRedis({ url: relay.via(redis.url) }, 'producer');
  direct = createRedis({ url: redis.url }, 'producer');
});
afterAll(async () => {
  web?.disconnect();
  direct?.disconnect();
  await relay?.close();
  await redis?.remove();
});

describe('a record lock held across a Redis outage', () => {
  it('is released once Redis is back, long before it would expire', async () => {
    const key = 'lock:campaign:outage';
    await withRecordLock(
      web,
      key,
      async () => {
        expect(await direct.pttl(key)).toBeGreaterThan(60_000);
        // Redis goes away while the holder works: its release fails.
        await relay.close();
      },
      { ttlMs: 120_000 },
    );
    expect(await direct.exists(key)).toBe(1);
    relay = await startTcpRelay(new URL(redis.url), relay.port);
    await eventually(async () => expect(await direct.exists(key)).toBe(0), 20_000);
    // The next writer takes it at once.
    expect(await withRecordLock(web, key, async () => 'next', { waitMs: 0 })).toBe('next');
  });

  it('never releases a lock that has since gone to another holder', async () => {
    const key = 'lock:campaign:taken-over';
    await withRecordLock(
      web,
      key,
      async () => {
        await relay.close();
        // Meanwhile the lock expires and another process takes it.
        await direct.set(key, 'another-holder', 'PX', 60_000);
      },
      { ttlMs: 120_000 },
    );
    relay = await startTcpRelay(new URL(redis.url), relay.port);
    // The late release has had its chances (it tries every few hundred ms at first).
    await web.ping();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await direct.get(key)).toBe('another-holder');
  });
});
