import { UnrecoverableError } from 'bullmq';
import { QUEUE } from '../../jobs/queues.js';
import { pruneIdempotencyKeys } from '../../core/platform/db/idempotency.js';
import type { QueueProcessor } from '../processor.js';

export const PRUNE_IDEMPOTENCY_KEYS = 'prune-idempotency-keys';

/** Housekeeping on a schedule; each task is a job name. */
export const maintenanceProcessor: QueueProcessor = {
  queue: QUEUE.maintenance,
  concurrency: 1,
  schedules: [{ id: PRUNE_IDEMPOTENCY_KEYS, everyMs: 3600_000 }],
  async process(job, { services }) {
    switch (job.name) {
      case PRUNE_IDEMPOTENCY_KEYS:
        return { deleted: await pruneIdempotencyKeys(services.mongo.db) };
      default:
        throw new UnrecoverableError(`Unknown maintenance task "${job.name}"`);
    }
  },
};
