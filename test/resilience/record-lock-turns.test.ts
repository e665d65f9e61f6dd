// Callers of one record lock in one process take turns here, and only the first of them asks
// Redis: an analysed call's four effects, run together, take the call's lock a dozen times within
// a few milliseconds, and each would otherwise ask again every 10–50 ms (core/platform/redis-mutex.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { RecordBusyError, withRecordLock } from '../../core/platform/redis-mutex.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';

let redis: PrivateRedis;
let client: RedisClient;
let direct: RedisClient;

beforeAll(async () => {
  redis = await startPrivateRedis();
  client = createRedis({ url: redis.url }, 'producer');
  direct = createRedis({ url: redis.url }, 'producer');
});
afterAll(async () => {
  client?.disconnect();
  direct?.disconnect();
  await redis?.remove();
});

/** How many SET commands Redis has run (INFO commandstats). */
async function setsSoFar(): Promise<number> {
  const info = await direct.info('commandstats');
  return Number(/cmdstat_set:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('callers of one record lock in one process', () => {
  it('run one at a time, in the order they asked, each asking Redis once', async () => {
    const key = 'lock:call:turns';
    const before = await setsSoFar();
    const order: number[] = [];
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        withRecordLock(client, key, async () => {
          inside += 1;
          most = Math.max(most, inside);
          // The lock is Redis's: a holder of this process holds it there too.
          expect(await direct.exists(key)).toBe(1);
          await pause(5);
          order.push(i);
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect((await setsSoFar()) - before).toBe(8);
    expect(await direct.exists(key)).toBe(0);
  });

  it('pass the turn on when a holder fails', async () => {
    const key = 'lock:call:failing-holder';
    const first = withRecordLock(client, key, async () => {
      await pause(5);
      throw new Error('the write failed');
    });
    const second = withRecordLock(client, key, async () => 'second ran');
    await expect(first).rejects.toThrow('the write failed');
    expect(await second).toBe('second ran');
  });

  it('still wait for a holder in another process, through Redis', async () => {
    const key = 'lock:call:other-process';
    await direct.set(key, 'another-process', 'PX', 150);
    const started = Date.now();
    expect(await withRecordLock(client, key, async () => 'after it', { waitMs: 5_000 })).toBe('after it');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('give up after waitMs behind a holder that asks for its own lock again, as when another process holds it', async () => {
    const key = 'lock:call:asked-again';
    const outcome = await withRecordLock(client, key, async () => {
      try {
        await withRecordLock(client, key, async () => 'never', { waitMs: 200 });
        return 'entered twice';
      } catch (err) {
        return err instanceof RecordBusyError ? 'busy' : String(err);
      }
    });
    expect(outcome).toBe('busy');
    // And the turn is free again afterwards.
    expect(await withRecordLock(client, key, async () => 'free', { waitMs: 0 })).toBe('free');
  });

  it('give up after waitMs while a caller of this process holds it longer, without skipping the queue', async () => {
    const key = 'lock:call:long-holder';
    const ran: string[] = [];
    const long = withRecordLock(client, key, async () => {
      await pause(400);
      ran.push('long');
    });
    const impatient = withRecordLock(client, key, async () => ran.push('impatient'), { waitMs: 50 });
    const patient = withRecordLock(client, key, async () => ran.push('patient'), { waitMs: 5_000 });
    await expect(impatient).rejects.toBeInstanceOf(RecordBusyError);
    await long;
    await patient;
    expect(ran).toEqual(['long', 'patient']);
  });
});
