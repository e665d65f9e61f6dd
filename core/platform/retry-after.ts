// Honouring an outside system's 429 + Retry-After inside one attempt: wait as asked, then send
// the same request again, a bounded number of times and never longer than a bound per wait.
// Past the bounds the attempt fails and the job's own backoff takes over, which waits at least
// the Retry-After too (retryAfterOf; jobs/backoff.ts).
import { setTimeout as sleep } from 'node:timers/promises';

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d{1,7}$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** An outside system asked us to slow down (429); `retryAfterMs` is what it asked for, if anything. */
export class RateLimitedError extends Error {
  constructor(
    readonly system: string,
    readonly retryAfterMs: number | null,
  ) {
    super(
      `${system} answered 429 Too Many Requests${retryAfterMs === null ? '' : ` (Retry-After ${Math.ceil(retryAfterMs / 1000)} s)`}.`,
    );
    this.name = 'RateLimitedError';
  }
}

/** The longest Retry-After a job's next attempt waits for: a day. */
export const RETRY_AFTER_CAP_MS = 86_400_000;

/**
 * The Retry-After of the RateLimitedError in `err` or its causes (a client's own error wraps the
 * 429 it gave up on: CrmError, TeamChatError), at most RETRY_AFTER_CAP_MS; null when none asked.
 */
export function retryAfterOf(err: unknown): number | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof RateLimitedError) {
      return e.retryAfterMs === null ? null : Math.min(e.retryAfterMs, RETRY_AFTER_CAP_MS);
    }
    e = e.cause;
  }
  return null;
}

interface RetryAfterPolicy {
  /** How many 429s one attempt waits out before giving up (default 3). */
  maxWaits?: number;
  /** The longest single wait (default 30 s); a longer Retry-After ends the attempt. */
  maxWaitMs?: number;
  /** The wait when the 429 carried no Retry-After (default 1 s). */
  defaultWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `send`; when it throws RateLimitedError, waits the Retry-After and runs it again, up to
 * `maxWaits` times. A 429 means the request was not processed, so repeating it is safe.
 */
export async function withRetryAfter<T>(send: () => Promise<T>, policy: RetryAfterPolicy = {}): Promise<T> {
  const maxWaits = policy.maxWaits ?? 3;
  const maxWaitMs = policy.maxWaitMs ?? 30_000;
  const pause = policy.sleep ?? ((ms: number) => sleep(ms));
  for (let waits = 0; ; waits++) {
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof RateLimitedError) || waits >= maxWaits) throw err;
      const wait = err.retryAfterMs ?? policy.defaultWaitMs ?? 1000;
      if (wait > maxWaitMs) throw err;
      await pause(wait);
    }
  }
}
