import { randomBytes } from 'node:crypto';
import { clock } from './clock.js';
import type { RedisClient } from './redis.js';

// The version a per-process cache is kept under (a firm's webhook endpoints, its workflow trigger
// index): a Redis string the writer sets anew after every change, which readers compare with the
// one their copy was made under. A fresh random value each time, never a counter: a Redis that
// lost its data (a restart without persistence, a failover to an empty replica) counts again from
// a value already used, and a copy made under it would pass for current. It is a decimal integer
// below 2^62 so that INCR, which earlier releases used on these keys, still works on it during a
// rolling deploy (their bump then changes it too) instead of failing the change it follows.
//
// A copy is also used for at most CACHE_COPY_MAX_AGE_MS, whatever the version says. The version
// may fail to move with its change: a failover to a replica that lacks the last write gives back
// the version from before it (one that copies were made under), and a change whose bump failed
// after its write to MongoDB (Redis gone in between; a DELETE so answered 500 and retried is a
// 404, no bump again) leaves the version as it was. Without the bound a process would keep such a
// copy until the firm's next change, for good if none comes. The cost: one more read of a
// firm's list per process a minute.

/** A new random version: a decimal integer in [1, 2^62). */
export function freshCacheVersion(): string {
  const n = randomBytes(8).readBigUInt64BE() >> 2n;
  return (n === 0n ? 1n : n).toString();
}

/** Marks the cache kept under `key` as changed: every copy made before is read again. */
export async function bumpCacheVersion(redis: RedisClient, key: string): Promise<void> {
  await redis.set(key, freshCacheVersion());
}

/** The longest a copy kept under a version is used before it is read again. */
export const CACHE_COPY_MAX_AGE_MS = 60_000;

/** What a copy was made under: the version read before it, and when (this process's clock). */
export interface CopyStamp {
  version: string | null;
  madeAt: number;
}

/** The stamp of a copy made now under `version` (null: the version key is absent). */
export const copyStamp = (version: string | null): CopyStamp => ({ version, madeAt: clock.now() });

/** Whether a copy may be used while the version reads `version`: made under it, and not too long ago. */
export function copyIsCurrent(copy: CopyStamp | undefined, version: string | null): boolean {
  if (copy === undefined || copy.version !== version) return false;
  const age = clock.now() - copy.madeAt;
  return age >= 0 && age < CACHE_COPY_MAX_AGE_MS;
}
