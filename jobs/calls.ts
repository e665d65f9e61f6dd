import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';

/** Places one outbound call with the voice provider (job id = call_id). */
export interface PlaceCallJob {
  callId: string;
  firm: string;
}

/** The provider events that change a call record; others are acknowledged and dropped. */
const CALL_EVENTS = ['call_started', 'call_ended', 'call_analyzed'] as const;
export type CallEventName = (typeof CALL_EVENTS)[number];

export function isCallEvent(event: string): event is CallEventName {
  return (CALL_EVENTS as readonly string[]).includes(event);
}

/** One provider webhook event, stored as received. */
export interface CallEventJob {
  firm: string;
  event: CallEventName;
  /** The provider's `call` object, unvalidated beyond `call_id` (webhook bodies accept unknown fields). */
  call: Record<string, unknown> & { call_id: string };
  received_at: number;
}

export const callJobs = {
  placeCall: defineJob<PlaceCallJob>({
    queue: QUEUE.calls,
    name: 'place-call',
    id: (job) => jobId(job.callId),
  }),
  callEvent: defineJob<CallEventJob>({
    queue: QUEUE.callEvents,
    name: 'call-event',
    // The firm is part of the id so that one firm's delivery can never shadow another's.
    id: (job) => jobId('evt', job.firm, job.event, job.call.call_id),
  }),
};
