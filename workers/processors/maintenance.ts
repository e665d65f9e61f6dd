import { JOBS } from '../../jobs/table.js';
import { pruneIdempotencyKeys as prune } from '../../core/platform/db/idempotency.js';
import type { JobProcessor } from '../runner.js';

export const PRUNE_IDEMPOTENCY_KEYS = JOBS.pruneIdempotencyKeys.name;

/** Deletes Idempotency-Key records whose 24 h window has passed (hourly). */
export const pruneIdempotencyKeys: JobProcessor<Record<string, never>> = async (_job, { services }) => ({
  deleted: await prune(services.mongo.db),
});
