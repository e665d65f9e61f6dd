import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { QUEUE } from '../../jobs/queues.js';
import type { PlaceCallJob } from '../../jobs/calls.js';
import { markDialFailed, placeOutboundCall } from '../../core/domain/calls/call-dialing.js';
import { ProviderError } from '../../core/integrations/voice/provider.js';
import type { QueueProcessor } from '../processor.js';

/**
 * A ceiling on dials per second across every worker process. It is also what makes
 * `queue.rateLimit()` queue-wide in BullMQ: without a limiter the pause stays local.
 */
const DIAL_LIMITER = { max: 50, duration: 1000 };
const DEFAULT_RATE_LIMIT_MS = 5000;

const isLastAttempt = (job: Job): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** Places one outbound call (job id = call_id). */
export const placeCallProcessor: QueueProcessor = {
  queue: QUEUE.calls,
  limiter: DIAL_LIMITER,
  async process(job, { services }) {
    const { callId, firm } = job.data as PlaceCallJob;
    try {
      return { outcome: await placeOutboundCall(services, callId) };
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
      if (isLastAttempt(job)) {
        await markDialFailed(
          services,
          firm,
          callId,
          `Gave up after ${job.attemptsMade + 1} attempts: ${(err as Error).message}`,
        );
      }
      throw err;
    }
  },
};
