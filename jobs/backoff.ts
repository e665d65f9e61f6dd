import type { BackoffStrategy } from 'bullmq';
import { retryAfterOf } from '../core/platform/retry-after.js';

// When a failed job runs again. BullMQ's `exponential` backoff doubles the wait with every failed
// attempt, so a job that failed a few times in a row while the service's own MongoDB or Redis was
// down slept 32 s, 64 s, … after they were back. A job whose every failure is the service's own
// (the `webhooks` queue's fan-outs, deliveries and replays: an endpoint's failures are waits in the
// delivery's record, not job failures) uses CAPPED instead: the wait doubles from the definition's
// `delay` up to CAPPED_MAX_MS and no further, jittered, and the job has CAPPED_ATTEMPTS attempts, so
// it outlasts an outage of about an hour and runs within CAPPED_MAX_MS of its end. Every other job
// (the queues' default, and each definition with a backoff of its own) uses RETRY_AFTER:
// exponential as BullMQ's, but never sooner than the Retry-After of a 429 it failed with (one
// longer than the attempt would wait in itself: core/platform/retry-after.ts), so an outside
// system (Clio, Slack) that asked for 45 s is not asked again after 4: an analysed call's effect,
// a workflow step, a contacts sync. The strategy is declared once, in the workers' settings
// (workers/runner.ts).

/** The custom backoff type: `{ type: CAPPED, delay }`, delay the first retry's wait. */
export const CAPPED = 'capped-exponential';

/** The longest wait between two attempts of a CAPPED job. */
export const CAPPED_MAX_MS = 5_000;

/** Attempts of a CAPPED job: 1,000 × 2.5–5 s, about an hour of MongoDB or Redis down. */
export const CAPPED_ATTEMPTS = 1000;

/** A CAPPED job's options. */
export const capped = (delayMs = 1000) =>
  ({ attempts: CAPPED_ATTEMPTS, backoff: { type: CAPPED, delay: delayMs } }) as const;

/**
 * The wait before the next attempt after `failures` failed ones (1 for the first retry):
 * `delay × 2^(failures − 1)`, at most CAPPED_MAX_MS, jittered into its upper half so that the jobs
 * failed by one outage do not all come back at one instant. `random` in [0, 1).
 */
export function cappedDelay(failures: number, delayMs: number, random: number = Math.random()): number {
  const wait = Math.min(delayMs * 2 ** Math.max(0, failures - 1), CAPPED_MAX_MS);
  return Math.round(wait * (0.5 + 0.5 * random));
}

/** The custom backoff type: `{ type: RETRY_AFTER, delay }`, BullMQ's exponential from `delay`, honouring Retry-After. */
export const RETRY_AFTER = 'exponential-retry-after';

/**
 * The wait before the next attempt after `failures` failed ones of a RETRY_AFTER job:
 * `delay × 2^(failures − 1)` (BullMQ's exponential), or the Retry-After `err` carries when longer.
 */
export function retryAfterDelay(failures: number, delayMs: number, err: unknown): number {
  const exponential = Math.round(delayMs * 2 ** Math.max(0, failures - 1));
  return Math.max(exponential, retryAfterOf(err) ?? 0);
}

/**
 * The workers' `settings.backoffStrategy`: BullMQ calls it with the failed attempts so far and the
 * error for a backoff type it does not know: CAPPED or RETRY_AFTER.
 */
export const backoffStrategy: BackoffStrategy = (attemptsMade, type, err, job) => {
  const backoff = job?.opts.backoff;
  const delay = typeof backoff === 'object' ? (backoff.delay ?? 1000) : 1000;
  if (type === CAPPED) return cappedDelay(attemptsMade, delay);
  if (type === RETRY_AFTER) return retryAfterDelay(attemptsMade, delay, err);
  throw new Error(`unknown backoff type ${String(type)}`);
};
