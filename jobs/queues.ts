import { Queue, type DefaultJobOptions, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { UnavailableError, isRedisUnavailable } from '../core/platform/errors.js';

// The contract between the web and the worker processes: which queues exist, and the
// defaults every job gets. Job names and payloads live beside their producers.

export const QUEUE = {
  /** Places one outbound call with the voice provider; job id = call_id. */
  calls: 'calls',
  /** Applies one voice-provider webhook event to our records; job id = event + call_id. */
  callEvents: 'call-events',
  /** The built-in voice simulator: plays a placed call out and sends its webhooks. */
  simulator: 'simulator',
  /** Periodic housekeeping (job schedulers), e.g. pruning expired Idempotency-Key records. */
  maintenance: 'maintenance',
} as const;

export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];
export const QUEUE_NAMES: QueueName[] = Object.values(QUEUE);

export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  // Bounded retention: Redis must not grow without end, but recent history stays for Bull Board.
  removeOnComplete: { age: 24 * 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 20000 },
};

export type Queues = Record<QueueName, Queue>;

/**
 * One Queue per name over the producer connection. Connection errors are reported once per
 * outage through `onError` (readiness and 503s tell the rest), instead of BullMQ's
 * console.error for every reconnect attempt.
 */
export function createQueues(connection: Redis, prefix: string, onError: (err: Error) => void): Queues {
  let reported = false;
  connection.on('ready', () => (reported = false));
  const entries = QUEUE_NAMES.map((name) => {
    const queue = new Queue(name, { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
    queue.on('error', (err) => {
      if (reported) return;
      reported = true;
      onError(err);
    });
    return [name, queue];
  });
  return Object.fromEntries(entries) as Queues;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((q) => q.close()));
}

/** BullMQ job ids may not contain ':'; business identities are joined with '|'. */
export function jobId(...parts: string[]): string {
  return parts.map((p) => p.replace(/[:|]/g, '_')).join('|');
}

/** Adds a job, turning a Redis outage into 503 so a 200 is never sent for work not enqueued. */
export async function enqueue<T>(queue: Queue, name: string, data: T, opts: JobsOptions): Promise<void> {
  // Fail fast while Redis is down rather than park the request in the offline queue.
  if ((queue.opts.connection as Redis).status !== 'ready') throw new UnavailableError('redis');
  try {
    await queue.add(name, data, opts);
  } catch (err) {
    if (isRedisUnavailable(err)) throw new UnavailableError('redis', err);
    throw err;
  }
}
