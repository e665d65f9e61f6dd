import { QUEUE } from './queues.js';
import { defineJob } from './define.js';

/**
 * Sweeps run every 30 s (by default) or every hour: ten completed runs of each are history enough
 * (failed ones are kept as every queue keeps failures).
 */
const SWEEP_RETENTION = { removeOnComplete: { age: 3600, count: 10 } };

/** Housekeeping on a schedule: each worker process upserts the scheduler (one schedule in all). */
export const maintenanceJobs = {
  pruneIdempotencyKeys: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'prune-idempotency-keys',
    everyMs: 3600_000,
    options: SWEEP_RETENTION,
  }),
  /** Deletes Clio connect states that expired unused (core/domain/crm/clio-connection.ts). */
  pruneClioOAuthStates: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'prune-clio-oauth-states',
    everyMs: 3600_000,
    options: SWEEP_RETENTION,
  }),
  /**
   * Frees dial slots whose lease ran out (a lost end event) and wakes the jobs waiting for them,
   * every DIAL_SLOT_REAP_MS (30 s).
   */
  reapDialSlots: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'reap-dial-slots',
    everyMs: (config) => config.dialSlotReapMs,
    options: SWEEP_RETENTION,
  }),
};
