import type { DncSweepJob } from '../../jobs/compliance.js';
import { recordListed, sweepQueuedCalls } from '../../core/domain/compliance/dnc-sweep.js';
import type { JobProcessor } from '../runner.js';

/**
 * Blocks the firm's queued campaign calls to numbers just put on its do-not-call list, then
 * records the addition's `dnc.added` events.
 */
export const dncSweep: JobProcessor<DncSweepJob> = async (job, { services }) => {
  const result = await sweepQueuedCalls(services, job.data);
  if (result.blocked > 0) {
    services.log.info({ firm: job.data.firm, ...result }, 'do-not-call: queued campaign calls blocked');
  }
  return { ...result, events: await recordListed(services, job.data) };
};
