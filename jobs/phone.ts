import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';
import { SWEEP_RETENTION } from './maintenance.js';
import { capped } from './backoff.js';

/** A missed call on a firm's phone system, to be called back (core/domain/phone/missed-calls.ts). */
export interface MissedCallbackJob {
  firm: string;
  /** The missed call's record, `<firm>|<telephonySessionId>`. */
  missedCallId: string;
}

export const phoneJobs = {
  /**
   * Decides and places the callback of one missed call, delayed by the firm's
   * missed_call_callback.delay_seconds; one per missed call (its id).
   */
  missedCallback: defineJob<MissedCallbackJob>({
    queue: QUEUE.calls,
    name: 'missed-call-callback',
    id: (job) => jobId('missed', job.missedCallId),
    // A refusal decides the missed call; its failures are the service's own (MongoDB, Redis
    // down): retried within seconds of their end for about an hour. With the default 8 attempts
    // (about 2 minutes) a longer outage left the missed call `pending`, never called back.
    options: capped(),
  }),
  /**
   * Checks every connected firm's RingCentral webhook subscription: renewed before it lapses,
   * made again when RingCentral dropped it (core/domain/phone/ringcentral-subscription.ts).
   */
  maintainRingCentralSubscriptions: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'maintain-ringcentral-subscriptions',
    everyMs: (config) => config.ringcentralSubscriptionCheckMs,
    options: SWEEP_RETENTION,
  }),
  /** Deletes RingCentral connect states that expired unused (hourly). */
  pruneRingCentralOAuthStates: defineJob<Record<string, never>>({
    queue: QUEUE.maintenance,
    name: 'prune-ringcentral-oauth-states',
    everyMs: 3600_000,
    options: SWEEP_RETENTION,
  }),
};
