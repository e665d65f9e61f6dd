import { UnrecoverableError } from 'bullmq';
import type {
  AnalyzeCallJob,
  CallEffectJob,
  CallEffectName,
  ChatEffectJob,
  ChatEffectsJob,
} from '../../jobs/call-analysis.js';
import { analyseCall } from '../../core/domain/call-analysis/pipeline.js';
import { isFinalEffectFailure, runCallEffect } from '../../core/domain/call-analysis/call-effects.js';
import { runChatEffect, runChatEffects } from '../../core/domain/chats/chat-effects.js';
import type { JobProcessor } from '../runner.js';

/** Extracts an analysed call's caller data once, then runs its effects (job id = firm + call). */
export const analyzeCall: JobProcessor<AnalyzeCallJob> = async (job, { services, attempt }) =>
  analyseCall(services, job.data, attempt);

/**
 * An effect's own job, retried with backoff on its own: its state after this attempt; a refusal
 * no attempt would change ends the job (the effect is recorded `failed`).
 */
async function ownEffectJob(effect: CallEffectName, run: () => Promise<string>) {
  try {
    return { effect, state: await run() };
  } catch (err) {
    // The effect is recorded `failed`; another attempt would only repeat the refusal.
    if (isFinalEffectFailure(err)) throw new UnrecoverableError((err as Error).message);
    throw err;
  }
}

/** One effect of an analysed call that failed in its analysis job (job id = firm + call + effect), retried with backoff on its own. */
export const callEffect: JobProcessor<CallEffectJob> = async (job, { services, attempt }) =>
  ownEffectJob(job.data.effect, () => runCallEffect(services, job.data, attempt));

/** The effects of an ended chat, together (job id = firm + chat), added by end-chat. */
export const chatEffects: JobProcessor<ChatEffectsJob> = async (job, { services, attempt }) =>
  runChatEffects(services, job.data, attempt);

/** One effect of an ended chat that failed in its chat-effects job (job id = firm + chat + effect), retried with backoff on its own. */
export const chatEffect: JobProcessor<ChatEffectJob> = async (job, { services, attempt }) =>
  ownEffectJob(job.data.effect, () => runChatEffect(services, job.data, attempt));
