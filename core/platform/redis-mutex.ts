import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// A short-lived mutual exclusion over Redis (SET NX PX, released only by its holder). Used
// where MongoDB's conditional updates are not enough: FerretDB (tests, local) evaluates an
// update's filter and writes the document in separate steps, so two concurrent conditional
// updates of one document can both apply.

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

type MutexResult<T> = { acquired: true; value: T } | { acquired: false };

/** Runs `fn` while holding `key`; returns {acquired: false} at once when another holder has it. */
async function withRedisMutex<T>(
  redis: Redis,
  key: string,
  ttlMs: number,
  fn: () => Promise<T>,
): Promise<MutexResult<T>> {
  const token = randomBytes(12).toString('hex');
  const taken = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (taken !== 'OK') return { acquired: false };
  try {
    return { acquired: true, value: await fn() };
  } finally {
    await redis.eval(RELEASE, 1, key, token).catch(() => undefined);
  }
}

/** Another writer held a record's lock for longer than a caller may wait; the job retries. */
export class RecordBusyError extends Error {
  constructor(key: string) {
    super(`The record ${key} is being updated elsewhere; retrying.`);
    this.name = 'RecordBusyError';
  }
}

/**
 * Runs `fn` holding the lock `key`, waiting (with jitter) up to `waitMs` for another holder.
 * The writers of one record take turns this way: FerretDB rewrites a whole document on update
 * from what it read, so two concurrent updates of one document could each undo the other's fields.
 */
export async function withRecordLock<T>(
  redis: Redis,
  key: string,
  fn: () => Promise<T>,
  options: { ttlMs?: number; waitMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 10_000);
  for (;;) {
    const result = await withRedisMutex(redis, key, options.ttlMs ?? 30_000, fn);
    if (result.acquired) return result.value;
    if (Date.now() > deadline) throw new RecordBusyError(key);
    await new Promise((r) => setTimeout(r, 10 + Math.floor(Math.random() * 40)));
  }
}
