import { UnrecoverableError, Worker } from 'bullmq';
import { QUEUE } from '../../jobs/queues.js';
import type { CallEventJob, PlaceCallJob } from '../../jobs/calls.js';
import { markDialFailed, placeOutboundCall } from '../../core/domain/calls/call-dialing.js';
import { applyCallEvent, resolveCallId } from '../../core/domain/calls/call-events.js';
import { withCallLock } from '../../core/domain/calls/call-lock.js';
import { startCallAnalysis } from '../../core/domain/call-analysis/pipeline.js';
import { ProviderError } from '../../core/integrations/voice/provider.js';
import type { JobProcessor } from '../runner.js';

const DEFAULT_RATE_LIMIT_MS = 5000;

/** Places one outbound call (job id = call_id). */
export const placeCall: JobProcessor<PlaceCallJob> = async (job, { services, attempt }) => {
  const { callId, firm } = job.data;
  try {
    return { outcome: await placeOutboundCall(services, callId, attempt) };
  } catch (err) {
    if (err instanceof ProviderError && err.kind === 'rate_limited') {
      // The provider is saturated: pause the whole queue instead of failing this job.
      await services.queues[QUEUE.calls].rateLimit(err.retryAfterMs ?? DEFAULT_RATE_LIMIT_MS);
      throw Worker.RateLimitError();
    }
    if (err instanceof ProviderError && err.kind === 'rejected') {
      await markDialFailed(services, firm, callId, err.message);
      throw new UnrecoverableError(err.message);
    }
    if (attempt.lastAttempt) {
      await markDialFailed(
        services,
        firm,
        callId,
        `Gave up after ${job.attemptsMade + 1} attempts: ${(err as Error).message}`,
      );
    }
    throw err;
  }
};

/**
 * Applies one voice-provider webhook event to our call record (job id = firm + event + call id),
 * one writer of the call at a time, so status only moves forward on every store. A call_analyzed
 * event then starts the call's pipeline (extraction, lead, CRM, email, team chat); a repeated
 * delivery starts it again, which finds its steps done.
 */
export const callEvent: JobProcessor<CallEventJob> = async (job, { services }) => {
  const data = job.data;
  const callId = await resolveCallId(services.mongo.db, data.firm, data.call);
  const { call, advanced } = await withCallLock(services, data.firm, callId, () =>
    applyCallEvent(services.mongo.db, data, callId),
  );
  if (data.event === 'call_analyzed') await startCallAnalysis(services, call.firm, call._id);
  return { call_id: call._id, status: call.status, advanced };
};
