// Callers of one record lock in one process take turns here, and only the first of them asks
// Redis: an analysed call's four effects, run together, take the call's lock a dozen times within
// a few milliseconds, and each would otherwise ask again every 10–50 ms (core/platform/redis-mutex.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { RecordBusyError, lockHolderPid, withRecordLock } from '../../core/platform/redis-mutex.js';
import { commandCalls, startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';

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

const setsSoFar = (): Promise<number> => commandCalls(direct, 'set');

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('callers of one record lock in one process', () => {
  it('run one at a time, in the order they asked; the lock is handed on, asked of Redis once for all', async () => {
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
    expect((await setsSoFar()) - before).toBe(1);
    // Released by the last of them.
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

  it("go back to Redis once less than 80 % of the lock's time is left, so a long line does not keep it", async () => {
    const key = 'lock:call:time-left';
    const before = await setsSoFar();
    const tokens: (string | null)[] = [];
    await Promise.all(
      Array.from({ length: 3 }, () =>
        withRecordLock(
          client,
          key,
          async () => {
            tokens.push(await direct.get(key));
            await pause(150);
          },
          { ttlMs: 500 },
        ),
      ),
    );
    // 150 ms of a 500 ms lock used: 70 % left, not handed on; each asked Redis afresh.
    expect((await setsSoFar()) - before).toBe(3);
    expect(new Set(tokens).size).toBe(3);
    expect(await direct.exists(key)).toBe(0);
  });

  it('release a lock handed on to callers that all gave up waiting, at once rather than when it expires', async () => {
    const key = 'lock:call:handed-to-nobody';
    const long = withRecordLock(client, key, () => pause(300));
    const impatient = withRecordLock(client, key, async () => 'never', { waitMs: 50 });
    await expect(impatient).rejects.toBeInstanceOf(RecordBusyError);
    await long;
    // The lock (30 s by default) is free well before it would have run out. The line's end lets it
    // go without waiting for Redis's answer, so it may still be held as `long` returns: up to 10 s
    // is allowed for that, a loaded machine's round trip, and still far short of the 30 s expiry.
    const freedAt = Date.now();
    while ((await direct.exists(key)) === 1 && Date.now() - freedAt < 10_000) await pause(10);
    expect(await direct.exists(key)).toBe(0);
    expect(await withRecordLock(direct, key, async () => 'taken by another process', { waitMs: 0 })).toBe(
      'taken by another process',
    );
  });

  it('pass their memo on to the next holder that keeps it, and to no holder that does not', async () => {
    const key = 'lock:call:memo';
    const seen: (string | undefined)[] = [];
    const keeper = (note: string) =>
      withRecordLock(
        client,
        key,
        async (held) => {
          seen.push(held.memo.get('note') as string | undefined);
          held.memo.set('note', note);
        },
        { keepsMemo: true },
      );
    const other = () =>
      withRecordLock(client, key, async (held) => {
        seen.push(held.memo.get('note') as string | undefined);
        held.memo.set('note', 'other');
      });
    // In line: keeper a, keeper b, a holder that keeps nothing, keeper c, keeper e.
    await Promise.all([keeper('a'), keeper('b'), other(), keeper('c'), keeper('e')]);
    expect(seen).toEqual([undefined, 'a', undefined, undefined, 'c']);
    // A lock taken from Redis afresh starts with nothing.
    await keeper('d');
    expect(seen[5]).toBeUndefined();
  });

  it('keep other processes out while it is handed on', async () => {
    const key = 'lock:call:handed-held';
    const outside: number[] = [];
    const ran: string[] = [];
    let other: Promise<void> | undefined;
    await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        withRecordLock(client, key, async () => {
          // Another process asks while the line holds the lock: it gets it once the line is done.
          if (i === 0)
            other = withRecordLock(direct, key, async () => void ran.push('other'), { waitMs: 5_000 });
          outside.push(await direct.exists(key));
          ran.push(`line ${i}`);
          await pause(20);
        }),
      ),
    );
    await other;
    expect(outside).toEqual([1, 1, 1, 1]);
    expect(ran).toEqual(['line 0', 'line 1', 'line 2', 'line 3', 'other']);
  });

  it('hand the lock to a caller that renews it, which keeps it past its first time', async () => {
    const key = 'lock:call:to-a-renewer';
    const first = withRecordLock(client, key, () => pause(20), { ttlMs: 3_000 });
    const renewer = withRecordLock(
      client,
      key,
      async () => {
        // Longer than the lock's 3 s: renewed every second, it is still held at the end. (A time
        // to live of seconds: a loaded machine can hold this process back for most of a second.)
        await pause(4_500);
        return direct.exists(key);
      },
      // Its wait for `first` (a round trip to Redis and 20 ms) is not what is tested: ample.
      { ttlMs: 3_000, renew: true, waitMs: 10_000 },
    );
    await first;
    expect(await renewer).toBe(1);
    expect(await direct.exists(key)).toBe(0);
  });
});

describe('a record lock in Redis', () => {
  it('names the process holding it (its id first in the token), so a lock left behind can be traced', async () => {
    const key = 'lock:call:holder';
    const token = await withRecordLock(client, key, async () => direct.get(key));
    expect(token).not.toBeNull();
    expect(lockHolderPid(token!)).toBe(process.pid);
    // Not a token of this form (a named owner's, or any other value): no holder.
    expect(lockHolderPid('job-42')).toBeUndefined();
    expect(lockHolderPid('abc.def.1')).toBeUndefined();
  });
});
