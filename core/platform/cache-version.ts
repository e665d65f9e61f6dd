import { randomBytes } from 'node:crypto';
import type { RedisClient } from './redis.js';

// The version a per-process cache is kept under (a firm's webhook endpoints, its workflow trigger
// index): a Redis string the writer sets anew after every change, which readers compare with the
// one their copy was made under. A fresh random value each time, never a counter: a Redis that
// lost its data (a restart without persistence, a failover to an empty replica) counts again from
// a value already used, and a copy made under it would pass for current. It is a decimal integer
// below 2^62 so that INCR, which earlier releases used on these keys, still works on it during a
// rolling deploy (their bump then changes it too) instead of failing the change it follows.

/** A new random version: a decimal integer in [1, 2^62). */
export function freshCacheVersion(): string {
  const n = randomBytes(8).readBigUInt64BE() >> 2n;
  return (n === 0n ? 1n : n).toString();
}

/** Marks the cache kept under `key` as changed: every copy made before is read again. */
export async function bumpCacheVersion(redis: RedisClient, key: string): Promise<void> {
  await redis.set(key, freshCacheVersion());
}
