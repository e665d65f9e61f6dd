import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';
import { capped } from './backoff.js';

/**
 * Numbers just put on a firm's do-not-call list (by the API, a CSV import or an opt-out): the
 * firm's queued, not-yet-dialled campaign calls to them are blocked now, without waiting for
 * their jobs to come due (core/domain/compliance/dnc-sweep.ts).
 */
export interface DncSweepJob {
  firm: string;
  /** E.164, at most one request's worth (5,000). */
  phones: string[];
  /** The addition's id (one job per addition). */
  batch: string;
  /**
   * The numbers this addition put on the list (not those listed before): dnc.added for each
   * (docs/events.md#event-types). Absent on jobs enqueued before it was kept.
   */
  listed?: string[];
}

export const complianceJobs = {
  // On the campaigns queue, without a priority: BullMQ takes it before the queue's prioritised
  // campaign-call jobs, so a busy queue does not hold the block up.
  dncSweep: defineJob<DncSweepJob>({
    queue: QUEUE.campaigns,
    name: 'dnc-sweep',
    id: (job) => jobId('dnc', job.firm, job.batch),
    // The queue's own retention: BullMQ trims a queue's whole finished set to the count of the
    // job that just finished, so a shorter one here cut the campaign calls' history to 20
    // completed (and their week of failures to 100) after each sweep.
    // Its failures are the service's own (MongoDB, Redis down): retried within seconds of their
    // end for about an hour. With the default 8 attempts (about 2 minutes) a longer outage failed
    // it for good, and its dnc.added events were never recorded (no webhook, no workflow).
    options: capped(),
  }),
};
