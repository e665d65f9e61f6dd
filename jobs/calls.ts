import { QUEUE, enqueue, jobId, type Queues } from './queues.js';

// Producers for the three call queues. Every job id is derived from business identity, so a
// repeated request or delivery adds nothing while the first job is still known to BullMQ.

export const CALL_JOB = {
  placeCall: 'place-call',
  callEvent: 'call-event',
  simulatorStep: 'simulator-step',
} as const;

/** Places one outbound call with the voice provider. */
export interface PlaceCallJob {
  callId: string;
  firm: string;
}

/** The provider events that change a call record; others are acknowledged and dropped. */
export const CALL_EVENTS = ['call_started', 'call_ended', 'call_analyzed'] as const;
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

/** Advances one simulated call (answer, hang up) and delivers its webhooks. */
export interface SimulatorStepJob {
  callId: string;
  providerCallId: string;
}

export async function enqueuePlaceCall(queues: Queues, job: PlaceCallJob): Promise<void> {
  await enqueue(queues[QUEUE.calls], CALL_JOB.placeCall, job, { jobId: jobId(job.callId) });
}

export async function enqueueCallEvent(queues: Queues, job: CallEventJob): Promise<void> {
  // The firm is part of the id so that one firm's delivery can never shadow another's.
  await enqueue(queues[QUEUE.callEvents], CALL_JOB.callEvent, job, {
    jobId: jobId('evt', job.firm, job.event, job.call.call_id),
  });
}

export async function enqueueSimulatorStep(
  queues: Queues,
  job: SimulatorStepJob,
  delayMs: number,
): Promise<void> {
  await enqueue(queues[QUEUE.simulator], CALL_JOB.simulatorStep, job, {
    jobId: jobId('sim', job.callId),
    delay: Math.max(0, delayMs),
  });
}
