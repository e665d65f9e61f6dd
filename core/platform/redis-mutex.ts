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
 * What the holders of one lock in this process pass on to each other while they hold it without a
 * break (handed on, never released to Redis in between): `memo` is what a holder that keeps it
 * (`keepsMemo`) knows of the records the lock guards, as it wrote them. Empty whenever the lock
 * is taken from Redis afresh, and emptied before and after a holder that does not keep it.
 */
export interface HeldLock {
  readonly memo: Map<string, unknown>;
}

/** A lock this process holds in Redis: its token, when it runs out at the latest (this clock), what its holders pass on. */
interface Lease {
  token: string;
  until: number;
  held: HeldLock;
}

/**
 * A lock is handed on to the next caller of this process only while at least this share of its
 * time is left: every holder has at least 80 % of the time it asked for (24 s of CALL_LOCK_MS's
 * 30), and a chain of hand-offs lasts at most a fifth of it before the lock goes back to Redis,
 * where callers of other processes get their turn.
 */
const HAND_ON_SHARE = 0.8;

/**
 * A holder's token: unique to one acquisition (the process id and a random part per process, then
 * a counter), so only its holder releases a lock. Not a secret; drawn without a call into the
 * random source each time (it was one per attempt, of every lock: a measurable share of the
 * worker's CPU). The process id says which process holds a lock (lockHolderPid): one left behind
 * by a process that was killed expires with its TTL, one of a live process is a leak.
 */
const PROCESS_TOKEN = `${process.pid}.${randomBytes(12).toString('base64url')}`;
let tokens = 0;
const newToken = (): string => `${PROCESS_TOKEN}.${(tokens++).toString(36)}`;

/** The id of the process holding a lock whose value is `token`; undefined for a named owner's lock. */
export function lockHolderPid(token: string): number | undefined {
  const [pid, random, counter] = token.split('.');
  if (random === undefined || counter === undefined || !/^\d+$/.test(pid ?? '')) return undefined;
  return Number(pid);
}

interface MutexOptions {
  ttlMs: number;
  /** The holder's name; a holder of that name (a retry of the same job) may take the lock over. */
  owner?: string;
  /** Extend the lock every ttlMs / 3 while `fn` runs, so a long holder keeps it and a dead one loses it soon. */
  renew?: boolean;
  /** `fn` keeps the held lock's memo true to what it writes (HeldLock); without, it is emptied first. */
  keepsMemo?: boolean;
}

/**
 * Runs `fn` while holding `key`; returns {acquired: false} at once when another holder has it.
 * `handed`: a lease an earlier caller of this process handed on, held already. `handOn`: asked as
 * the holder ends; true when it took the lease to hand on, which is then not released.
 */
async function withRedisMutex<T>(
  redis: RedisClient,
  key: string,
  options: MutexOptions,
  fn: (held: HeldLock) => Promise<T>,
  handed?: Lease,
  handOn?: (lease: Lease) => boolean,
): Promise<MutexResult<T>> {
  const { ttlMs } = options;
  let lease: Lease;
  if (handed !== undefined) {
    lease = handed;
  } else {
    const token = options.owner ?? newToken();
    // Counted from before the request: the lock runs out no sooner than this in Redis.
    const askedAt = Date.now();
    const taken =
      options.owner === undefined
        ? (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK'
        : (await ACQUIRE.run(redis, { lock: key }, { token, ttl_ms: ttlMs })) === 1;
    if (!taken) return { acquired: false };
    lease = { token, until: askedAt + ttlMs, held: { memo: new Map() } };
  }
  const { token } = lease;
  if (options.keepsMemo !== true) lease.held.memo.clear();
  const renewal = options.renew
    ? setInterval(
        () => void RENEW.run(redis, { lock: key }, { token, ttl_ms: ttlMs }).catch(() => undefined),
        ttlMs / 3,
      )
    : undefined;
  try {
    return { acquired: true, value: await fn(lease.held) };
  } finally {
    clearInterval(renewal);
    // What a holder that does not keep the memo wrote is not known to the next.
    if (options.keepsMemo !== true) lease.held.memo.clear();
    if (handOn?.(lease) !== true) await release(redis, key, token, ttlMs, options.owner === undefined);
  }
}

/** Releases this holder's lock (`token`); when Redis is away, again later if `retry`. */
async function release(
  redis: RedisClient,
  key: string,
  token: string,
  ttlMs: number,
  retry: boolean,
): Promise<void> {
  await RELEASE.run(redis, { lock: key }, { token }).catch(() => {
    // Redis away as the holder ends (its request then fails): the lock would bar the record's
    // next writer, a client's retry among them, until it expires. Its own token is released
    // once Redis is back. Not a named owner's lock: a retry of the same job, holding the lock
    // again under the same name by then, would lose it.
    if (retry) releaseLater(redis, key, token, ttlMs);
  });
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
 * The lines of callers of each lock over one connection. `turns`: the callers in turn, only the
 * first asking Redis, the others waiting here instead of asking again every 10–50 ms (an analysed
 * call's four effects, run together, take the call's lock a dozen times within a few
 * milliseconds). `handed`: the lease a holder handed on, until the next caller in line takes it
 * (or, when every caller left in line gave up waiting, the line's end releases it). Per
 * connection: a caller over another one (another Redis, a cut link) is as another process to them.
 */
interface Lines {
  turns: Map<string, Promise<void>>;
  handed: Map<string, { lease: Lease; ttlMs: number }>;
}

const linesByConnection = new WeakMap<RedisClient, Lines>();

function linesOf(redis: RedisClient): Lines {
  let lines = linesByConnection.get(redis);
  if (lines === undefined) {
    lines = { turns: new Map(), handed: new Map() };
    linesByConnection.set(redis, lines);
  }
  return lines;
}

/** The lease handed on for `key`, taken by this caller; undefined when none is, or it is released now (too little time left). */
async function takeHanded(redis: RedisClient, key: string, ttlMs: number): Promise<Lease | undefined> {
  const { handed } = linesOf(redis);
  const left = handed.get(key);
  if (left === undefined) return undefined;
  handed.delete(key);
  if (left.lease.until - Date.now() >= HAND_ON_SHARE * ttlMs) return left.lease;
  await release(redis, key, left.lease.token, left.ttlMs, true);
  return undefined;
}

/** The end of a line: a lease handed on to callers that all gave up waiting goes back to Redis. */
function releaseUntaken(redis: RedisClient, key: string): void {
  const { handed } = linesOf(redis);
  const left = handed.get(key);
  if (left === undefined) return;
  handed.delete(key);
  void release(redis, key, left.lease.token, left.ttlMs, true);
}

interface Turn {
  /** Ends this caller's turn: the next in line goes. */
  end(): void;
  /** Whether another caller waits in line after this one. */
  followed(): boolean;
}

/** Waits for the earlier callers of `key` over `redis` (at most until `deadline`); returns this turn. */
async function localTurn(redis: RedisClient, key: string, deadline: number): Promise<Turn> {
  const { turns } = linesOf(redis);
  const before = turns.get(key);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = (before ?? Promise.resolve()).then(() => mine);
  turns.set(key, tail);
  const end = (): void => {
    release();
    if (turns.get(key) === tail) {
      turns.delete(key);
      releaseUntaken(redis, key);
    }
  };
  const turn: Turn = { end, followed: () => turns.get(key) !== tail };
  if (before === undefined) return turn;
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
  return turn;
}

/**
 * Runs `fn` holding the lock `key`, waiting (with jitter) up to `waitMs` for another holder.
 * The writers of one record take turns this way: FerretDB rewrites a whole document on update
 * from what it read, so two concurrent updates of one document could each undo the other's fields.
 * A holder with callers of this process waiting behind it hands the lock on to the next instead
 * of releasing it, while most of its time is left (HAND_ON_SHARE): an analysed call's effects
 * take the call's lock a dozen times within milliseconds, and each would otherwise release it and
 * take it again (two round trips). `fn` gets what the holders pass on (HeldLock).
 */
export async function withRecordLock<T>(
  redis: RedisClient,
  key: string,
  fn: (held: HeldLock) => Promise<T>,
  options: { ttlMs?: number; waitMs?: number; owner?: string; renew?: boolean; keepsMemo?: boolean } = {},
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 10_000);
  const mutex: MutexOptions = {
    ttlMs: options.ttlMs ?? 30_000,
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.renew === undefined ? {} : { renew: options.renew }),
    ...(options.keepsMemo === undefined ? {} : { keepsMemo: options.keepsMemo }),
  };
  // A named owner may take its own lock over (a retry of the same job): it never waits here.
  if (options.owner !== undefined) return acquireAndRun(redis, key, mutex, fn, deadline);
  const turn = await localTurn(redis, key, deadline);
  try {
    // A renewed lock is not handed on (its time no longer counts from when it was taken); it may
    // be handed one, which it then renews.
    const handOn =
      options.renew === true
        ? undefined
        : (lease: Lease): boolean => {
            if (!turn.followed() || lease.until - Date.now() < HAND_ON_SHARE * mutex.ttlMs) return false;
            linesOf(redis).handed.set(key, { lease, ttlMs: mutex.ttlMs });
            return true;
          };
    const handed = await takeHanded(redis, key, mutex.ttlMs);
    if (handed !== undefined) {
      const result = await withRedisMutex(redis, key, mutex, fn, handed, handOn);
      if (result.acquired) return result.value;
    }
    return await acquireAndRun(redis, key, mutex, fn, deadline, handOn);
  } finally {
    turn.end();
  }
}

/** Takes the lock from Redis, asking again every 10–50 ms until `deadline`, and runs `fn` holding it. */
async function acquireAndRun<T>(
  redis: RedisClient,
  key: string,
  mutex: MutexOptions,
  fn: (held: HeldLock) => Promise<T>,
  deadline: number,
  handOn?: (lease: Lease) => boolean,
): Promise<T> {
  for (;;) {
    const result = await withRedisMutex(redis, key, mutex, fn, undefined, handOn);
    if (result.acquired) return result.value;
    if (Date.now() > deadline) throw new RecordBusyError(key);
    await sleep(10 + Math.floor(Math.random() * 40));
  }
}
