import { QUEUE } from './queues.js';
import { capped } from './backoff.js';
import { defineJob, jobId } from './define.js';
import { analysisDigest } from './call-analysis.js';

/** Places one outbound call with the voice provider (job id = call_id). */
export interface PlaceCallJob {
  callId: string;
  firm: string;
  /**
   * Added by the lost-call sweep: the call's own job was gone before any dial
   * (core/domain/calls/lost-calls.ts). A call not `repeatable` is then ended, not dialled.
   */
  lost?: true;
}

/** The provider events that change a call record; others are acknowledged and dropped. */
const CALL_EVENTS = ['call_started', 'call_ended', 'call_analyzed'] as const;
export type CallEventName = (typeof CALL_EVENTS)[number];

export function isCallEvent(event: string): event is CallEventName {
  return (CALL_EVENTS as readonly string[]).includes(event);
}

/**
 * What the service keeps of a provider's `call` object (Retell's shape): the fields it uses,
 * typed and bounded (the transcript at 200,000 characters), nothing else — webhook bodies are
 * untrusted and may be megabytes (core/domain/calls/provider-call.ts makes it).
 */
export interface ProviderCallSnapshot {
  call_id: string;
  call_status?: string;
  agent_id?: string;
  direction?: string;
  from_number?: string;
  to_number?: string;
  start_timestamp?: number;
  end_timestamp?: number;
  duration_ms?: number;
  disconnection_reason?: string;
  transcript?: string;
  /** Our call id, when the call is one we placed (it travels in the provider's metadata). */
  metadata?: { call_id: string };
  retell_llm_dynamic_variables?: Record<string, string>;
  call_analysis?: {
    call_summary: string | null;
    user_sentiment: string | null;
    call_successful: boolean | null;
    /** Retell's voicemail detection (absent in jobs queued before it was kept). */
    in_voicemail?: boolean | null;
    custom_analysis_data: Record<string, unknown>;
  };
}

/** One provider webhook event. */
export interface CallEventJob {
  firm: string;
  event: CallEventName;
  call: ProviderCallSnapshot;
  received_at: number;
  /**
   * Signed with the platform's key and taken while MongoDB was unreachable: the worker checks
   * that the call is the firm's before it applies anything (core/domain/calls/call-owner.ts).
   */
  owner_unchecked?: true;
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
    // The firm is part of the id so that one firm's delivery can never shadow another's; a
    // call_analyzed carries its analysis digest, so a re-analysis is a new job, a repeat is not.
    id: (job) =>
      job.event === 'call_analyzed'
        ? jobId('evt', job.firm, job.event, job.call.call_id, analysisDigest(job.call))
        : jobId('evt', job.firm, job.event, job.call.call_id),
    // The call record is the durable result; keep only a short history of these larger jobs
    // (up to about 220 kB each: the transcript's 200,000 characters and the analysis's 16 KiB).
    // Every failure is the service's own (MongoDB or Redis down): a delivery acknowledged with
    // a 200 outlasts an outage of about an hour (jobs/backoff.ts), where 8 attempts lasted 2 min.
    options: {
      ...capped(),
      removeOnComplete: { age: 3600, count: 100 },
      removeOnFail: { age: 7 * 24 * 3600, count: 200 },
    },
  }),
};
