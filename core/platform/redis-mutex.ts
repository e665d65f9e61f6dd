import { randomBytes } from 'node:crypto';
import type { RedisClient } from './redis.js';
import { loadRedisScript } from './redis-script.js';
import { setTimeout as sleep } from 'node:timers/promises';

// A short-lived mutual exclusion over Redis (SET NX PX, released only by its holder). Used
// where MongoDB's conditional updates are not enough: FerretDB (tests, local) evaluates an
// update's filter and writes the document in separate steps, so two concurrent conditional
// updates of one document can both apply.

const ACQUIRE = loadRedisScript(new URL('./redis-mutex-acquire.lua', import.meta.url), {
  keys: ['lock'],
  args: ['token', 'ttl_ms'],
});
const RENEW = loadRedisScript(new URL('./redis-mutex-renew.lua', import.meta.url), {
  keys: ['lock'],
  args: ['token', 'ttl_ms'],
});
const RELEASE = loadRedisScript(new URL('./redis-mutex-release.lua', import.meta.url), {
  keys: ['lock'],
  args: ['token'],
});

type MutexResult<T> = { acquired: true; value: T } | { acquired: false };

/**
 * A holder's token: unique to one acquisition (a random part per process, then a counter), so only
 * its holder releases a lock. Not a secret; drawn without a call into the random source each time
 * (it was one per attempt, of every lock: a measurable share of the worker's CPU).
 */
const PROCESS_TOKEN = randomBytes(12).toString('base64url');
let tokens = 0;
const newToken = (): string => `${PROCESS_TOKEN}.${(tokens++).toString(36)}`;

interface MutexOptions {
  ttlMs: number;
  /** The holder's name; a holder of that name (a retry of the same job) may take the lock over. */
  owner?: string;
  /** Extend the lock every ttlMs / 3 while `fn` runs, so a long holder keeps it and a dead one loses it soon. */
  renew?: boolean;
}

/** Runs `fn` while holding `key`; returns {acquired: false} at once when another holder has it. */
async function withRedisMutex<T>(
  redis: RedisClient,
  key: string,
  options: MutexOptions,
  fn: () => Promise<T>,
): Promise<MutexResult<T>> {
  const { ttlMs } = options;
  const token = options.owner ?? newToken();
  const taken =
    options.owner === undefined
      ? (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK'
      : (await ACQUIRE.run(redis, { lock: key }, { token, ttl_ms: ttlMs })) === 1;
  if (!taken) return { acquired: false };
  const renewal = options.renew
    ? setInterval(
        () => void RENEW.run(redis, { lock: key }, { token, ttl_ms: ttlMs }).catch(() => undefined),
        ttlMs / 3,
      )
    : undefined;
  try {
    return { acquired: true, value: await fn() };
  } finally {
    clearInterval(renewal);
    await RELEASE.run(redis, { lock: key }, { token }).catch(() => {
      // Redis away as the holder ends (its request then fails): the lock would bar the record's
      // next writer, a client's retry among them, until it expires. Its own token is released
      // once Redis is back. Not a named owner's lock: a retry of the same job, holding the lock
      // again under the same name by then, would lose it.
      if (options.owner === undefined) releaseLater(redis, key, token, ttlMs);
    });
  }
}

/** Tries a failed release again, backing off, until it lands or the lock has expired by itself. */
function releaseLater(redis: RedisClient, key: string, token: string, ttlMs: number): void {
  const until = Date.now() + ttlMs;
  const attempt = (delayMs: number): void => {
    if (Date.now() + delayMs >= until) return;
    setTimeout(() => {
      RELEASE.run(redis, { lock: key }, { token }).catch(() => attempt(Math.min(delayMs * 2, 5_000)));
    }, delayMs).unref();
  };
  attempt(250);
}

/** Another writer held a record's lock for longer than a caller may wait; the job retries. */
export class RecordBusyError extends Error {
  constructor(key: string) {
    super(`The record ${key} is being updated elsewhere; retrying.`);
    this.name = 'RecordBusyError';
  }
}

/**
 * The callers of each lock over one connection, in turn: only the first asks Redis, the others
 * wait for it here instead of asking again every 10–50 ms (an analysed call's four effects, run
 * together, take the call's lock a dozen times within a few milliseconds). Per connection: a
 * caller over another one (another Redis, a cut link) is as another process to them.
 */
const turnsByConnection = new WeakMap<RedisClient, Map<string, Promise<void>>>();

/** Waits for the earlier callers of `key` over `redis` (at most until `deadline`); returns the release of this turn. */
async function localTurn(redis: RedisClient, key: string, deadline: number): Promise<() => void> {
  let localTurns = turnsByConnection.get(redis);
  if (localTurns === undefined) {
    localTurns = new Map();
    turnsByConnection.set(redis, localTurns);
  }
  const turns = localTurns;
  const before = turns.get(key);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = (before ?? Promise.resolve()).then(() => mine);
  turns.set(key, tail);
  const end = (): void => {
    release();
    if (turns.get(key) === tail) turns.delete(key);
  };
  if (before === undefined) return end;
  let timer: NodeJS.Timeout | undefined;
  const waited = await Promise.race([
    before.then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    }),
  ]);
  clearTimeout(timer);
  if (!waited) {
    // Still behind another caller (or a caller holding the lock asks for it again): as busy as
    // when another process holds it. Those after us wait for `before` through our turn.
    void before.then(end);
    throw new RecordBusyError(key);
  }
  return end;
}

/**
 * Runs `fn` holding the lock `key`, waiting (with jitter) up to `waitMs` for another holder.
 * The writers of one record take turns this way: FerretDB rewrites a whole document on update
 * from what it read, so two concurrent updates of one document could each undo the other's fields.
 */
export async function withRecordLock<T>(
  redis: RedisClient,
  key: string,
  fn: () => Promise<T>,
  options: { ttlMs?: number; waitMs?: number; owner?: string; renew?: boolean } = {},
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 10_000);
  const mutex: MutexOptions = {
    ttlMs: options.ttlMs ?? 30_000,
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.renew === undefined ? {} : { renew: options.renew }),
  };
  // A named owner may take its own lock over (a retry of the same job): it never waits here.
  const endTurn = options.owner === undefined ? await localTurn(redis, key, deadline) : () => undefined;
  try {
    for (;;) {
      const result = await withRedisMutex(redis, key, mutex, fn);
      if (result.acquired) return result.value;
      if (Date.now() > deadline) throw new RecordBusyError(key);
      await sleep(10 + Math.floor(Math.random() * 40));
    }
  } finally {
    endTurn();
  }
}
