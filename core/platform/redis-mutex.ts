import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// A short-lived mutual exclusion over Redis (SET NX PX, released only by its holder). Used
// where MongoDB's conditional updates are not enough: FerretDB (tests, local) evaluates an
// update's filter and writes the document in separate steps, so two concurrent conditional
// updates of one document can both apply.

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export type MutexResult<T> = { acquired: true; value: T } | { acquired: false };

/** Runs `fn` while holding `key`; returns {acquired: false} at once when another holder has it. */
export async function withRedisMutex<T>(
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
