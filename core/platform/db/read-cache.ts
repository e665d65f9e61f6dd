import type { Db } from 'mongodb';
import type { CollectionName } from './collections.js';

// A process-local cache of the few small documents read on almost every request (API key
// hashes, firms, agents, session revocations), so a request pays no database round trip for
// them. Kept correct across processes by a change epoch in Redis:
//
// - every change to a cached collection goes through `changeCached`, which bumps the epoch
//   before and after the write (a Redis INCR; refused with 503 before anything is written when
//   Redis is down) and clears this process's cache;
// - each request learns the current epoch from the round trip it makes anyway (the rate-limit
//   script returns it), and when it differs from the one this process's entries were read under,
//   the cache is cleared and the request authenticates again from the database.
//
// So a revoked key, a deleted agent or a patched firm takes effect on the very next request on
// every web process, with no extra round trip. While the epoch cannot be read (Redis down) the
// cache is cleared on every request: reads go to the database. Only processes that call
// `enableReadCache` cache (the web process); every process announces its changes.

interface Entry {
  value: unknown;
  expires: number;
}

const TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;

export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  /** The epoch the entries were read under; null: unknown (nothing cached is trusted). */
  private epoch: string | null = null;

  async read<T>(
    coll: CollectionName,
    id: string,
    load: () => Promise<T | null>,
    options: { cacheMissing?: boolean } = {},
  ): Promise<T | null> {
    const key = `${coll}\u0001${id}`;
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.expires > Date.now()) return copyDocument(hit.value) as T | null;
    const epoch = this.epoch;
    const value = await load();
    // Only what was read under the epoch still current is kept.
    if ((value !== null || options.cacheMissing === true) && epoch !== null && epoch === this.epoch) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { value: copyDocument(value), expires: Date.now() + TTL_MS });
    }
    return value;
  }

  /** The epoch the entries were read under: a request notes it before it reads anything. */
  get currentEpoch(): string | null {
    return this.epoch;
  }

  /**
   * Records the epoch a request saw (null: it could not be read); entries read under another
   * epoch are dropped. The request must read again what it read from the cache when the epoch
   * it noted beforehand was not null and differs (`mustReread`).
   */
  observeEpoch(epoch: string | null): void {
    if (epoch !== null && epoch === this.epoch) return;
    this.entries.clear();
    this.epoch = epoch;
  }

  clear(): void {
    this.entries.clear();
    this.epoch = null;
  }
}

/**
 * A deep copy of a document as structuredClone makes it, for what documents are made of (plain
 * objects, arrays, dates, primitives) without its serialisation round trip, which cost a web
 * request more than any other function of ours; anything else inside is copied by structuredClone.
 * Every caller gets its own copy: nothing it changes reaches the cache or another request.
 */
export function copyDocument(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyDocument(value[i]);
    return out;
  }
  if (value instanceof Date) return new Date(value.getTime());
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyDocument((value as Record<string, unknown>)[key]);
    // An own "__proto__" key stays an own key, as structuredClone keeps it.
    if (key === '__proto__') {
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    } else out[key] = item;
  }
  return out;
}

const caches = new WeakMap<Db, ReadCache>();
const announcers = new WeakMap<Db, () => Promise<void>>();

/** Turns the cache on for this database handle (the web process). */
export function enableReadCache(db: Db): ReadCache {
  const cache = caches.get(db) ?? new ReadCache();
  caches.set(db, cache);
  return cache;
}

export const readCacheOf = (db: Db): ReadCache | undefined => caches.get(db);

/** Whether a request that noted `before` and then saw `observed` read anything stale. */
export const mustReread = (before: string | null, observed: string | null): boolean =>
  before !== null && observed !== before;

/** How this process bumps the shared change epoch (wired with its Redis connection). */
export function registerChangeAnnouncer(db: Db, announce: () => Promise<void>): void {
  announcers.set(db, announce);
}

/** A point read by _id through the cache when this process has one. */
export function cachedRead<T>(
  db: Db,
  coll: CollectionName,
  id: string,
  load: () => Promise<T | null>,
  options?: { cacheMissing?: boolean },
): Promise<T | null> {
  const cache = caches.get(db);
  return cache === undefined ? load() : cache.read(coll, id, load, options);
}

/**
 * A write to a cached collection: the epoch moves before (so nothing read from now on is kept
 * past the write) and after (so whatever was read meanwhile is dropped), and this process's
 * cache is cleared.
 */
export async function changeCached<T>(db: Db, write: () => Promise<T>): Promise<T> {
  const announce = announcers.get(db);
  await announce?.();
  try {
    return await write();
  } finally {
    caches.get(db)?.clear();
    await announce?.().catch(() => {});
  }
}
