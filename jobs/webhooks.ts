import { createHash } from 'node:crypto';
import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';
import { capped, RETRY_AFTER } from './backoff.js';

/** One recorded event, to be fanned out to its firm's subscribed endpoints (job id = the event id). */
export interface WebhookFanoutJob {
  eventId: string;
  /**
   * The event as it was just recorded (dates as ISO 8601), so the fan-out need not read it back;
   * absent when the record was already there (a retried step) or large: then it is read.
   */
  event?: {
    firm: string;
    type: string;
    subject: string;
    occurred_at: string;
    recorded_at: string;
    data_json: string;
    caused_by_workflows?: string[];
    /** Jobs added before the chain was kept name the last workflow alone. */
    caused_by_workflow?: string;
  };
  /** Added again to finish an earlier run's work: it looks for the deliveries that run made. */
  retried?: boolean;
  /**
   * Recorded while a change to the firm's listeners (an endpoint being made, say) was under way:
   * the fan-out first waits for it to end (core/domain/events/listeners.ts).
   */
  afterChange?: boolean;
}

/**
 * One delivery of one event to one endpoint: waits for its turn in its lane (endpoint + subject),
 * then sends, and sleeps (parked, no attempt spent) between its retries. Job id = the delivery
 * and its generation (a manual retry of a settled delivery is a new generation).
 */
export interface WebhookDeliverJob {
  /** The delivery document's `_id`. */
  delivery: string;
  generation: number;
}

/** Re-sends an endpoint's events of a time window, in order, with their ids (job id = the replay). */
export interface WebhookReplayJob {
  endpoint: string;
  firm: string;
  replay: string;
  /** ISO 8601. */
  from: string;
  to: string;
}

/** The mail telling a firm one of its endpoints was disabled for failing (job id = endpoint + when). */
export interface WebhookNoticeJob {
  endpoint: string;
  firm: string;
  /** The disabling's time, ms since the epoch. */
  at: number;
}

export const deliverJobId = (delivery: string, generation: number): string =>
  jobId('dl', createHash('sha256').update(`${delivery}#${generation}`).digest('base64url').slice(0, 32));

export const webhookJobs = {
  webhookFanout: defineJob<WebhookFanoutJob>({
    queue: QUEUE.webhooks,
    name: 'webhook-fanout',
    id: (job) => jobId('fanout', job.eventId),
    // Its failures are the service's own (MongoDB, Redis down): retried within seconds of their
    // end (jobs/backoff.ts).
    options: capped(),
  }),
  webhookDeliver: defineJob<WebhookDeliverJob>({
    queue: QUEUE.webhooks,
    name: 'webhook-deliver',
    id: (job) => deliverJobId(job.delivery, job.generation),
    // Its own retries (the schedule) are waits in the delivery's record, not job attempts: these
    // are for the service's own outages (MongoDB, Redis) while it works, retried within seconds
    // of their end (jobs/backoff.ts).
    options: capped(),
  }),
  webhookReplay: defineJob<WebhookReplayJob>({
    queue: QUEUE.webhooks,
    name: 'webhook-replay',
    id: (job) => jobId('replay', job.endpoint, job.replay),
    options: capped(),
  }),
  webhookNotice: defineJob<WebhookNoticeJob>({
    queue: QUEUE.webhooks,
    name: 'webhook-notice',
    id: (job) => jobId('notice', job.endpoint, String(job.at)),
    // A mail, like the call_analyzed effects: its attempts are also the mail server's retry
    // budget (the last one records the mail failed), so it keeps the exponential backoff (RETRY_AFTER); an
    // outage it sleeps past delays only this mail, never a delivery.
    options: { attempts: 12, backoff: { type: RETRY_AFTER, delay: 2000 } },
  }),
};
