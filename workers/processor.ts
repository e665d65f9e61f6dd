import type { Job, Worker } from 'bullmq';
import type { QueueName } from '../jobs/queues.js';
import type { Services } from '../core/wiring/services.js';

export interface ProcessorContext {
  services: Services;
  /** The BullMQ worker running this job (for rate limiting the whole queue). */
  worker: Worker;
  token: string | undefined;
}

/** One queue's processor: thin, it loads state, calls core/, records the outcome. */
export interface QueueProcessor {
  queue: QueueName;
  /** Jobs run at once by one worker process; defaults to WORKER_CONCURRENCY. */
  concurrency?: number;
  /**
   * A queue-wide rate limit (BullMQ `limiter`). Setting one also lets `queue.rateLimit(ms)`
   * pause the queue for every worker process, which is how a provider's 429 slows dialling.
   */
  limiter?: { max: number; duration: number };
  /**
   * Jobs this queue runs on a schedule: each worker process upserts them at start (an upsert,
   * so many processes keep exactly one schedule), naming the job `id`.
   */
  schedules?: Array<{ id: string; everyMs: number }>;
  process(job: Job, ctx: ProcessorContext): Promise<unknown>;
}
