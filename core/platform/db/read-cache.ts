import type { Db } from 'mongodb';
import type { CollectionName } from './collections.js';
import { isMongoUnavailable } from '../errors.js';

// A process-local cache of the few small documents read on almost every request or job (API key
// hashes, firms, agents, session revocations, widget keys), so a request or a job pays no
// database round trip for them. Kept correct across processes by a change epoch in Redis:
//
// - every change to a cached collection goes through `changeCached`, which bumps the epoch
//   before and after the write (a Redis INCR; refused with 503 before anything is written when
//   Redis is down) and clears this process's cache;
// - the web process: each request learns the current epoch from the round trip it makes anyway
//   (the rate-limit script returns it), and when it differs from the one this process's entries
//   were read under, the cache is cleared and the request authenticates again from the database;
// - the worker process: each job reads the epoch (one GET, `observeChangeEpoch`) before it runs.
//
// So a revoked key, a deleted agent or a patched firm takes effect on the very next request on
// every web process, and in the very next job to start on every worker, with no extra round
// trip on the web and one GET a job on the worker. A request or job already running when the
// change is made may still use the value from before it, as a database read made just before
// the change would have. While the epoch cannot be read (Redis down, or the process's Redis
// connection lost) nothing cached is trusted: the cache is cleared when the connection closes
// and on every request or job until the epoch is read again, and reads go to the database.
// Only processes that call `enableReadCache` cache (the web and worker processes); every
// process announces its changes.
//
// Out-of-order epochs (two requests' replies, or two jobs' GETs, arriving in the other order)
// cost only a clear: an entry is kept only when nothing was observed while it was being read.
//
// An entry lives TTL_MS between reads from the database. While MongoDB is unreachable, an entry
// past that is still answered, as long as the epoch it was read under is current: so a firm API
// key used before an outage still authenticates a webhook delivery during it (whose job waits
// for MongoDB in its queue: docs/webhooks.md#mongodb-outages).

interface Entry {
  /** Frozen, all the way down: a shared read hands out this very value. */
  value: unknown;
  expires: number;
}

export interface ReadOptions {
  /** Keep a document that is not there (null) too. */
  cacheMissing?: boolean;
  /**
   * The cached document itself, frozen, instead of a copy: for a caller that only reads it (a
   * request's hot path: the copy is most of what a cached read costs). See `Frozen`.
   */
  shared?: boolean;
}

/**
 * A document from a shared read: frozen all the way down (a write to it throws), so read-only in
 * its type too. Its dates are frozen objects whose setters still work: never call them.
 */
export type Frozen<T> = T extends Date
  ? T
  : T extends readonly (infer U)[]
    ? readonly Frozen<U>[]
    : T extends object
      ? { readonly [K in keyof T]: Frozen<T[K]> }
      : T;

const TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;

/** An entry's value as a read gives it: itself to a shared read, else a copy the caller may change. */
const valueOf = <T>(entry: Entry, options: ReadOptions): T | null =>
  (options.shared === true ? entry.value : copyDocument(entry.value)) as T | null;

export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  /** The epoch the entries were read under; null: unknown (nothing cached is trusted). */
  private epoch: string | null = null;
  /** Moves whenever the entries are dropped: a read is kept only if it did not move meanwhile. */
  private generation = 0;

  async read<T>(
    coll: CollectionName,
    id: string,
    load: () => Promise<T | null>,
    options: ReadOptions = {},
  ): Promise<T | null> {
    const key = `${coll}\u0001${id}`;
    const hit = this.entries.get(key);
    if (hit !== undefined && hit.expires > Date.now()) return valueOf<T>(hit, options);
    const generation = this.generation;
    let value: T | null;
    try {
      value = await load();
    } catch (err) {
      // MongoDB unreachable: an entry past its TTL is still what the database holds as long as
      // the epoch it was read under is current (every change moves the epoch and drops it), so
      // it answers rather than a 503; never without a known epoch (Redis down too).
      if (
        hit === undefined ||
        !isMongoUnavailable(err) ||
        this.epoch === null ||
        generation !== this.generation
      ) {
        throw err;
      }
      return valueOf<T>(hit, options);
    }
    // Only what was read wholly under the epoch still current is kept: an epoch observed while
    // it was read, even an older one arriving late, may mean a change was under way.
    if (
      (value !== null || options.cacheMissing === true) &&
      this.epoch !== null &&
      generation === this.generation
    ) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { value: freezeDocument(copyDocument(value)), expires: Date.now() + TTL_MS });
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
    this.generation += 1;
    this.epoch = epoch;
  }

  clear(): void {
    this.observeEpoch(null);
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

/**
 * Freezes the plain objects and arrays of a document as `copyDocument` made it, and returns it.
 * Anything else inside (a date, a BSON value, a buffer, which cannot be frozen) is left as it is.
 */
function freezeDocument(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const proto: unknown = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return value;
  for (const key of Object.keys(value)) freezeDocument((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}

const caches = new WeakMap<Db, ReadCache>();

/** How a process takes part in the change epoch (wired with its Redis connection). */
export interface ChangeEpoch {
  /** Bumps the epoch; throws (503) when Redis cannot be reached. */
  announce(): Promise<void>;
  /** The current epoch ('0' before any change); null when it cannot be read now. */
  read(): Promise<string | null>;
}

const epochs = new WeakMap<Db, ChangeEpoch>();

/** Turns the cache on for this database handle (the web and worker processes). */
export function enableReadCache(db: Db): ReadCache {
  const cache = caches.get(db) ?? new ReadCache();
  caches.set(db, cache);
  return cache;
}

export const readCacheOf = (db: Db): ReadCache | undefined => caches.get(db);

/** Whether a request that noted `before` and then saw `observed` read anything stale. */
export const mustReread = (before: string | null, observed: string | null): boolean =>
  before !== null && observed !== before;

/** How this process bumps and reads the shared change epoch (wired with its Redis connection). */
export function registerChangeEpoch(db: Db, epoch: ChangeEpoch): void {
  epochs.set(db, epoch);
}

/**
 * How long a job waits for the epoch before it runs without the cache: a worker's Redis
 * connection queues commands while it reconnects, and a job must not wait on that for what is
 * only a saving.
 */
const EPOCH_WAIT_MS = 1000;

/**
 * Brings this process's cache up to the current change epoch (one Redis GET): a worker's job does
 * it before it runs, and so do the web's widget-key routes, which take no token and so make no
 * rate-limit round trip to carry it; a change made before is seen by everything read after. A
 * process without a cache reads nothing; an epoch that cannot be read drops the cache.
 */
export async function observeChangeEpoch(db: Db): Promise<void> {
  const cache = caches.get(db);
  if (cache === undefined) return;
  const epoch = epochs.get(db);
  let timer: NodeJS.Timeout | undefined;
  const seen =
    epoch === undefined
      ? null
      : await Promise.race([
          epoch.read().catch(() => null),
          new Promise<null>((resolve) => {
            timer = setTimeout(() => resolve(null), EPOCH_WAIT_MS);
          }),
        ]);
  clearTimeout(timer);
  cache.observeEpoch(seen);
}

/** A point read by _id through the cache when this process has one. */
export function cachedRead<T>(
  db: Db,
  coll: CollectionName,
  id: string,
  load: () => Promise<T | null>,
  options?: Omit<ReadOptions, 'shared'>,
): Promise<T | null> {
  const cache = caches.get(db);
  return cache === undefined ? load() : cache.read(coll, id, load, options);
}

/**
 * As `cachedRead`, but a cached document is handed out itself, frozen, not copied: for a caller
 * that only reads it. (Read from the database, it is the caller's own and not frozen.)
 */
export function cachedReadShared<T>(
  db: Db,
  coll: CollectionName,
  id: string,
  load: () => Promise<T | null>,
  options?: Omit<ReadOptions, 'shared'>,
): Promise<Frozen<T> | null> {
  const cache = caches.get(db);
  const read = cache === undefined ? load() : cache.read(coll, id, load, { ...options, shared: true });
  return read as Promise<Frozen<T> | null>;
}

/**
 * A write to a cached collection: the epoch moves before (so nothing read from now on is kept
 * past the write) and after (so whatever was read meanwhile is dropped), and this process's
 * cache is cleared.
 */
export async function changeCached<T>(db: Db, write: () => Promise<T>): Promise<T> {
  const epoch = epochs.get(db);
  await epoch?.announce();
  try {
    return await write();
  } finally {
    caches.get(db)?.clear();
    await epoch?.announce().catch(() => {});
  }
}
