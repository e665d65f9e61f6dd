import { QUEUE } from './queues.js';
import { defineJob } from './define.js';

/** Housekeeping on a schedule: each worker process upserts the scheduler (one schedule in all). */
export const maintenanceJobs = {
  pruneIdempotencyKeys: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'prune-idempotency-keys',
    everyMs: 3600_000,
  }),
};
