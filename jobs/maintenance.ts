import { QUEUE } from './queues.js';
import { RETRY_AFTER } from './backoff.js';
import { defineJob, jobId } from './define.js';

/**
 * Sweeps run every 30 s (by default) or every hour: ten completed runs of each are history enough
 * (failed ones are kept as every queue keeps failures). Every scheduled sweep uses it.
 */
export const SWEEP_RETENTION = { removeOnComplete: { age: 3600, count: 10 } };

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
   * Writes every firm's webhook keys' copy in Redis (core/domain/firms/webhook-keys.ts), hourly:
   * firms made before the copy existed get one, and a Redis that lost its data gets them back.
   */
  copyWebhookKeys: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'copy-webhook-keys',
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
  /**
   * Lost calls, every LOST_CALL_SWEEP_MS (5 min; core/domain/calls/lost-calls.ts): adds again the
   * place-call job of calls never dialled whose job is gone (a Redis failover, a crash), ends those
   * whose job failed for good without ending them, asks the voice provider about dialled calls
   * whose events stopped, and runs again the analysis of ended calls whose pipeline stopped; and
   * adds again the chat-effects job of ended chats whose effects stopped unsettled with no job
   * (core/domain/chats/lost-chats.ts).
   */
  sweepLostCalls: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'sweep-lost-calls',
    everyMs: (config) => config.lostCallSweepMs,
    options: SWEEP_RETENTION,
  }),
  /**
   * Streams a firm's do-not-call list into its Redis index and marks it ready for an hour
   * (core/domain/compliance/dnc-index.ts); asked for by the dial gate when the index is not ready.
   * One per firm at a time (its id); removed when done, so the next request can ask again.
   */
  rebuildDncIndex: defineJob<{ firm: string }>({
    queue: QUEUE.maintenance,
    name: 'rebuild-dnc-index',
    id: ({ firm }) => jobId('dnc-index', firm),
    options: {
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 3,
      backoff: { type: RETRY_AFTER, delay: 1000 },
    },
  }),
  /**
   * Puts a firm's dial attempts of the last 24 h back into Redis from its dial decisions and
   * marks them complete (core/domain/compliance/frequency.ts); asked for by the dial gate when
   * the mark is missing (Redis lost its data). One per firm at a time (its id).
   */
  rebuildDialAttempts: defineJob<{ firm: string }>({
    queue: QUEUE.maintenance,
    name: 'rebuild-dial-attempts',
    id: ({ firm }) => jobId('dial-attempts', firm),
    options: {
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 3,
      backoff: { type: RETRY_AFTER, delay: 1000 },
    },
  }),
};
