import { JOBS } from '../../jobs/table.js';
import { pruneIdempotencyKeys as prune } from '../../core/platform/db/idempotency.js';
import type { JobProcessor } from '../runner.js';
import { reapDialSlots as reap } from '../../core/domain/pacing/dial-slots.js';
import { pruneExpiredClioStates } from '../../core/domain/crm/clio-connection.js';
import { rebuildDncIndex as rebuild } from '../../core/domain/compliance/dnc-index.js';
import { publishEveryFirmsWebhookKeys } from '../../core/domain/firms/webhook-keys.js';
import { sweepLostCalls as sweepLost } from '../../core/domain/calls/lost-calls.js';
import { sweepLostChats } from '../../core/domain/chats/lost-chats.js';
import { rebuildFirmAttempts } from '../../core/domain/compliance/frequency.js';

export const PRUNE_IDEMPOTENCY_KEYS = JOBS.pruneIdempotencyKeys.name;
export const PRUNE_CLIO_OAUTH_STATES = JOBS.pruneClioOAuthStates.name;

/** Deletes Idempotency-Key records whose 24 h window has passed (hourly). */
export const pruneIdempotencyKeys: JobProcessor<Record<string, never>> = async (_job, { services }) => ({
  deleted: await prune(services.mongo.db),
});

/** Writes every firm's webhook keys' copy in Redis (hourly; core/domain/firms/webhook-keys.ts). */
export const copyWebhookKeys: JobProcessor<Record<string, never>> = async (_job, { services }) => ({
  firms: await publishEveryFirmsWebhookKeys(services),
});

/** Frees dial slots whose lease ran out and wakes the jobs waiting for them (every 30 s). */
export const reapDialSlots: JobProcessor<Record<string, never>> = async (_job, { services }) =>
  reap(services);

export const SWEEP_LOST_CALLS = JOBS.sweepLostCalls.name;

/**
 * Lost dials, ends and analyses, and ended chats' lost effects: their jobs added again (every 5 min;
 * core/domain/calls/lost-calls.ts, core/domain/chats/lost-chats.ts).
 */
export const sweepLostCalls: JobProcessor<Record<string, never>> = async (_job, { services }) => {
  // Each ended call and chat is looked at in about four passes (this window and the interval since the last).
  const windowMs = 3 * services.config.lostCallSweepMs;
  const calls = await sweepLost(services, {
    dialAfterMs: services.config.lostDialAfterMs,
    endAfterMs: services.config.lostEndAfterMs,
    analysisWindowMs: windowMs,
  });
  const chats = await sweepLostChats(services, { endAfterMs: services.config.lostEndAfterMs, windowMs });
  return { ...calls, chatsChecked: chats.checked, chatEffectsRerun: chats.rerun };
};

/** Deletes Clio connect states that expired unused (hourly). */
export const pruneClioOAuthStates: JobProcessor<Record<string, never>> = async (_job, { services }) => ({
  deleted: await pruneExpiredClioStates(services.mongo.db),
});

/** Streams a firm's do-not-call list into its Redis index (core/domain/compliance/dnc-index.ts). */
export const rebuildDncIndex: JobProcessor<{ firm: string }> = async (job, { services }) =>
  rebuild(services, job.data.firm);

/** Puts a firm's dial attempts back into Redis from its decisions (core/domain/compliance/frequency.ts). */
export const rebuildDialAttempts: JobProcessor<{ firm: string }> = async (job, { services }) =>
  rebuildFirmAttempts(services, job.data.firm);
