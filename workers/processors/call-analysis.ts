import { UnrecoverableError } from 'bullmq';
import type { AnalyzeCallJob, CallEffectJob } from '../../jobs/call-analysis.js';
import { analyseCall } from '../../core/domain/call-analysis/pipeline.js';
import { isFinalEffectFailure, runCallEffect } from '../../core/domain/call-analysis/call-effects.js';
import type { JobProcessor } from '../runner.js';

/** Extracts an analysed call's caller data once, then runs its effects (job id = firm + call). */
export const analyzeCall: JobProcessor<AnalyzeCallJob> = async (job, { services, attempt }) =>
  analyseCall(services, job.data, attempt);

/** One effect of an analysed call that failed in its analysis job (job id = firm + call + effect), retried with backoff on its own. */
export const callEffect: JobProcessor<CallEffectJob> = async (job, { services, attempt }) => {
  try {
    return { effect: job.data.effect, state: await runCallEffect(services, job.data, attempt) };
  } catch (err) {
    // The effect is recorded `failed`; another attempt would only repeat the refusal.
    if (isFinalEffectFailure(err)) throw new UnrecoverableError((err as Error).message);
    throw err;
  }
};
