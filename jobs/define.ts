import type { JobsOptions } from 'bullmq';
import { UnavailableError, isRedisUnavailable } from '../core/platform/errors.js';
import type { RedisClient } from '../core/platform/redis.js';
import type { Config } from '../core/platform/config.js';
import type { QueueName, Queues } from './queues.js';
import { annotateSpan, tracingActive } from '../core/platform/telemetry/start.js';
import { spanSubjectOf } from './span-subject.js';

// How a job is declared (once, in jobs/table.ts) and added. A job's id is derived from its
// business identity, so a repeated request or delivery adds nothing while the first job is
// still known to BullMQ.

export interface JobDefinition<T> {
  queue: QueueName;
  /** The BullMQ job name; the worker of `queue` dispatches on it. */
  name: string;
  /** The job id from the payload (business identity); absent for scheduled jobs. */
  id?: (data: T) => string;
  options?: Omit<JobsOptions, 'jobId' | 'delay'>;
  /**
   * Run every `everyMs` by a job scheduler that each worker process upserts at start, and again
   * when its next run was lost (workers/job-schedules.ts); a function when the interval is a
   * configuration variable.
   */
  everyMs?: number | ((config: Config) => number);
  /** The payload type, carried for the compiler only. */
  readonly payload?: T;
}

export const defineJob = <T>(definition: Omit<JobDefinition<T>, 'payload'>): JobDefinition<T> => definition;

export type PayloadOf<D> = D extends JobDefinition<infer T> ? T : never;

/** BullMQ job ids may not contain ':'; business identities are joined with '|'. */
export function jobId(...parts: string[]): string {
  return parts.map((p) => p.replace(/[:|]/g, '_')).join('|');
}

function assertReady(queues: Queues, queue: QueueName): void {
  // Fail fast while Redis is down rather than park the request in the offline queue.
  if ((queues[queue].opts.connection as RedisClient).status !== 'ready') throw new UnavailableError('redis');
}

const asUnavailable = (err: unknown): unknown =>
  isRedisUnavailable(err) ? new UnavailableError('redis', err) : err;

/** The definition's backoff kind, kept when only its delay is configured (a number is fixed). */
function backoffType(backoff: JobsOptions['backoff']): string {
  return typeof backoff === 'object' && backoff !== null ? backoff.type : 'fixed';
}

/** Adds a job, turning a Redis outage into 503 so a 200 is never sent for work not enqueued. */
export async function enqueue<T>(
  queues: Queues,
  job: JobDefinition<T>,
  data: T,
  /** `retryDelayMs`: the first retry's delay of the definition's exponential backoff, when configured. */
  options: { delay?: number; retryDelayMs?: number } = {},
): Promise<void> {
  assertReady(queues, job.queue);
  if (tracingActive()) annotateSpan(spanSubjectOf(data));
  try {
    await queues[job.queue].add(job.name, data, {
      ...job.options,
      ...(job.id === undefined ? {} : { jobId: job.id(data) }),
      ...(options.delay === undefined ? {} : { delay: Math.max(0, options.delay) }),
      ...(options.retryDelayMs === undefined
        ? {}
        : { backoff: { type: backoffType(job.options?.backoff), delay: options.retryDelayMs } }),
    });
  } catch (err) {
    throw asUnavailable(err);
  }
}

/**
 * Adds a job that must run after what its caller just did, even if a job of that id has already
 * finished: BullMQ ignores an add while it still keeps a completed or failed job of that id (the
 * last 100 completed for up to an hour, failed ones a week: jobs/queues.ts), so such a job is
 * removed and added again. Only for idempotent jobs whose run is what clears the caller's mark (an
 * event's fan-out and its "due" mark), or that retries what its caller left undone (an analysed
 * call's effect that failed in the analysis job).
 */
export async function enqueueRun<T>(
  queues: Queues,
  job: JobDefinition<T>,
  data: T,
  /** As enqueue's. */
  options: { delay?: number; retryDelayMs?: number } = {},
): Promise<void> {
  await enqueue(queues, job, data, options);
  if (job.id === undefined) return;
  let finished;
  try {
    finished = await queues[job.queue].getJob(job.id(data));
    const state = await finished?.getState();
    if (finished === undefined || (state !== 'completed' && state !== 'failed')) return;
  } catch (err) {
    throw asUnavailable(err);
  }
  // Another process may have removed or re-added it meanwhile: the add below is then a no-op.
  await finished.remove().catch(() => undefined);
  await enqueue(queues, job, data, options);
}

/** One job of a bulk add: its payload and, optionally, a BullMQ priority (1 first … 2,097,151 last). */
export interface BulkItem<T> {
  data: T;
  priority?: number;
}

/**
 * Adds many jobs of one definition in one round trip (Queue.addBulk), each with its id from the
 * payload, so a repeated bulk (a resumed fan-out) adds nothing for jobs BullMQ still knows.
 */
export async function enqueueBulk<T>(
  queues: Queues,
  job: JobDefinition<T>,
  items: BulkItem<T>[],
  /** `retryDelayMs`: as enqueue's, for every job of the bulk. */
  options: { retryDelayMs?: number } = {},
): Promise<void> {
  if (items.length === 0) return;
  assertReady(queues, job.queue);
  const backoff =
    options.retryDelayMs === undefined
      ? {}
      : { backoff: { type: backoffType(job.options?.backoff), delay: options.retryDelayMs } };
  try {
    await queues[job.queue].addBulk(
      items.map((item) => ({
        name: job.name,
        data: item.data,
        opts: {
          ...job.options,
          ...(job.id === undefined ? {} : { jobId: job.id(item.data) }),
          ...(item.priority === undefined ? {} : { priority: item.priority }),
          ...backoff,
        },
      })),
    );
  } catch (err) {
    throw asUnavailable(err);
  }
}
