import { sha256Hex } from '../core/platform/crypto.js';
import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';
import { RETRY_AFTER } from './backoff.js';

// The call_analyzed pipeline (docs/webhooks.md#the-call_analyzed-pipeline): one job extracts the caller
// data once and stores it on the call, then runs the effects; a failing one gets a job of its own
// — with its own attempts and backoff, so a failing Slack post is retried alone and never repeats
// the email or the Clio contact. An ended chat's effects (docs/webhooks.md#chats) run the same way:
// end-chat adds the chat-effects job, and a failing effect gets a chat-effect job of its own.

/** The effects of an analysed call, as get-call shows them; an ended chat has the same four (get-chat). */
export const CALL_EFFECTS = ['lead', 'crm', 'email', 'team_chat'] as const;
export type CallEffectName = (typeof CALL_EFFECTS)[number];

/**
 * What one post-call analysis said, as a short digest: a re-run of Retell's analysis sends a
 * second call_analyzed whose digest differs, so its jobs are new, while a repeat of the same
 * analysis keeps the ids of the first and adds nothing.
 */
export function analysisDigest(source: { call_analysis?: unknown; transcript?: string | null }): string {
  return sha256Hex(JSON.stringify([source.call_analysis ?? null, source.transcript ?? null])).slice(0, 20);
}

/**
 * Extract the caller data of an analysed call, then start its effects (job id = firm + call +
 * the analysis digest, when the job was started by a call_analyzed event).
 */
export interface AnalyzeCallJob {
  firm: string;
  callId: string;
  analysis?: string;
}

/** One effect of an analysed call (job id = firm + call + effect). */
export interface CallEffectJob {
  firm: string;
  callId: string;
  effect: CallEffectName;
}

/** The effects of an ended chat, together (job id = firm + chat). */
export interface ChatEffectsJob {
  firm: string;
  chatId: string;
}

/** One effect of an ended chat (job id = firm + chat + effect). */
export interface ChatEffectJob {
  firm: string;
  chatId: string;
  effect: CallEffectName;
}

/**
 * An effect's own job: about an hour of retries (2 s, 4 s, ... 68 min in all) before the effect is
 * `failed`: long enough to ride out a Slack or Clio outage, short enough to be noticed the same day.
 * The first delay is CALL_EFFECT_RETRY_MS (2 s), given when the job is added; no retry comes
 * sooner than a 429's Retry-After (RETRY_AFTER).
 */
const EFFECT_JOB_OPTIONS = { attempts: 12, backoff: { type: RETRY_AFTER, delay: 2000 } };

export const callAnalysisJobs = {
  analyzeCall: defineJob<AnalyzeCallJob>({
    queue: QUEUE.callEffects,
    name: 'analyze-call',
    id: (job) =>
      job.analysis === undefined
        ? jobId('analyze', job.firm, job.callId)
        : jobId('analyze', job.firm, job.callId, job.analysis),
  }),
  callEffect: defineJob<CallEffectJob>({
    queue: QUEUE.callEffects,
    name: 'call-effect',
    id: (job) => jobId('effect', job.firm, job.callId, job.effect),
    options: EFFECT_JOB_OPTIONS,
  }),
  chatEffects: defineJob<ChatEffectsJob>({
    queue: QUEUE.callEffects,
    name: 'chat-effects',
    id: (job) => jobId('chat-effects', job.firm, job.chatId),
  }),
  chatEffect: defineJob<ChatEffectJob>({
    queue: QUEUE.callEffects,
    name: 'chat-effect',
    id: (job) => jobId('chat-effect', job.firm, job.chatId, job.effect),
    options: EFFECT_JOB_OPTIONS,
  }),
};
