import { Queue, type DefaultJobOptions } from 'bullmq';
import { RETRY_AFTER } from './backoff.js';
import type { RedisClient } from '../core/platform/redis.js';
import type { RedisKeys } from '../core/platform/redis-keys.js';
import { queueTelemetry } from '../core/platform/telemetry/start.js';

// The queues: the contract between the web and the worker processes. Jobs are declared, each
// once, in jobs/table.ts; a queue's settings that every process must agree on live here.

export const QUEUE = {
  /** Places one outbound call with the voice provider; job id = call_id. */
  calls: 'calls',
  /** Applies one voice-provider webhook event to our records; job id = evt|<firm>|<event>|<provider call id>. */
  callEvents: 'call-events',
  /** The call_analyzed pipeline: extraction, then lead, CRM, email and team chat, each its own job. */
  callEffects: 'call-effects',
  /** The built-in voice simulator: plays a placed call out and sends its webhooks. */
  simulator: 'simulator',
  /** Periodic housekeeping (job schedulers), e.g. pruning expired Idempotency-Key records. */
  maintenance: 'maintenance',
  /** Campaigns: the launch fan-out, and one job per campaign + phone that waits for its turn and dials. */
  campaigns: 'campaigns',
  /**
   * Cal.com booking events (job id = trigger + booking uid + delivery) and the delayed sends of
   * their reminders (job id = booking uid + start + offset + recipient).
   */
  bookings: 'bookings',
  /** Imports one batch of contact rows (POST /api/contacts/import); job id = the import's job_id. */
  contacts: 'contacts',
  /**
   * Events out: each event's fan-out to its firm's endpoints (job id = event), one job per
   * delivery (job id = delivery + generation), replays and disabled-endpoint notices.
   */
  webhooks: 'webhooks',
  /**
   * Workflows: the trigger of each domain event (job id = the event id), then each run's steps
   * (job id = run + node + visit) and the timeouts of its `wait_for` steps.
   */
  workflows: 'workflows',
} as const;

export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];
export const QUEUE_NAMES: QueueName[] = Object.values(QUEUE);

/**
 * A job scheduler's run (a job declared with `everyMs`; BullMQ gives its runs the ids
 * "repeat:<scheduler>:<time>"): housekeeping on a timer, not work anyone asked for.
 */
export const isScheduledRun = (jobId: string): boolean => jobId.startsWith('repeat:');

interface QueueSettings {
  /** Jobs one worker process runs at once; default WORKER_CONCURRENCY. */
  concurrency?: number;
  /**
   * A queue-wide rate limit (BullMQ `limiter`). Setting one also lets `queue.rateLimit(ms)`
   * pause the queue for every worker process, which is how a provider's 429 slows dialling.
   */
  limiter?: { max: number; duration: number };
}

export const QUEUE_SETTINGS: Record<QueueName, QueueSettings> = {
  // A ceiling on dials per second across every worker process.
  [QUEUE.calls]: { limiter: { max: 50, duration: 1000 } },
  [QUEUE.callEvents]: {},
  [QUEUE.callEffects]: {},
  [QUEUE.simulator]: {},
  [QUEUE.maintenance]: { concurrency: 1 },
  [QUEUE.campaigns]: {},
  [QUEUE.bookings]: {},
  // An import holds up to 5,000 rows (16 MiB of JSON) in memory: a few at a time per process.
  [QUEUE.contacts]: { concurrency: 2 },
  // Deliveries wait on firms' servers (up to WEBHOOK_TIMEOUT_MS each), not on CPU: many at once,
  // so that one slow endpoint's requests leave room for every other endpoint's.
  [QUEUE.webhooks]: { concurrency: 64 },
  [QUEUE.workflows]: {},
};

export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 8,
  // BullMQ's exponential, never sooner than an outside system's Retry-After (jobs/backoff.ts).
  backoff: { type: RETRY_AFTER, delay: 1000 },
  // Retention bounded by count on every queue (and by age): Redis must not grow without end.
  // A finished job's result is in MongoDB (the call, the lead, the effect records), so Bull Board
  // keeps the last hour's 100 completed jobs per queue for a look at what just ran; failures,
  // what an operator acts on, stay a week. A busy queue reaches its bound in minutes, so Redis
  // is flat soon after start (docs/soak.md#what-is-kept-and-for-how-long).
  removeOnComplete: { age: 3600, count: 100 },
  removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
};

/**
 * BullMQ's per-queue event stream (read only by QueueEvents, which the service does not use;
 * Bull Board reads the job records): a short tail instead of BullMQ's 10,000 entries a queue.
 */
export const EVENTS_STREAM_MAX_LEN = 1000;

export type Queues = Record<QueueName, Queue>;

/**
 * One Queue per name over the producer connection. Connection errors are reported once per
 * outage through `onError` (readiness and 503s tell the rest), instead of BullMQ's
 * console.error for every reconnect attempt.
 */
export function createQueues(
  connection: RedisClient,
  keys: RedisKeys,
  onError: (err: Error) => void,
): Queues {
  let reported = false;
  connection.on('ready', () => (reported = false));
  const entries = QUEUE_NAMES.map((name) => {
    const queue = new Queue(name, {
      connection,
      prefix: keys.queuePrefix(name),
      defaultJobOptions: DEFAULT_JOB_OPTIONS,
      streams: { events: { maxLen: EVENTS_STREAM_MAX_LEN } },
      // With tracing on, each job carries its trace from the add to the worker's processing.
      ...queueTelemetry(),
    });
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
