import { DelayedError, UnrecoverableError, Worker } from 'bullmq';
import { QUEUE } from '../../jobs/queues.js';
import type { CallEventJob, PlaceCallJob } from '../../jobs/calls.js';
import { analysisDigest } from '../../jobs/call-analysis.js';
import { markDialFailed, placeOutboundCall } from '../../core/domain/calls/call-dialing.js';
import {
  applyCallEvent,
  applyNamedCallEvent,
  callIdByProvider,
  callNamedByEvent,
  type AppliedCallEvent,
} from '../../core/domain/calls/call-events.js';
import { withCallLock } from '../../core/domain/calls/call-lock.js';
import { startCallAnalysis } from '../../core/domain/call-analysis/pipeline.js';
import { ProviderError } from '../../core/integrations/voice/provider.js';
import type { JobProcessor } from '../runner.js';
import type { Services } from '../../core/wiring/services.js';
import { callsCollection, type CallDoc } from '../../core/domain/calls/calls.js';
import { onCallFinished } from '../../core/domain/calls/call-finished.js';
import { wakeDialWaiters } from '../../core/domain/pacing/dial-slots.js';
import { jobRef } from '../../core/domain/pacing/parking.js';
import { SLOT_WAIT_SAFETY_MS, park, parkWhilePaused } from '../park.js';
import {
  listCallOptOut,
  scanTranscript,
  type OptOutListing,
} from '../../core/domain/compliance/opt-out-listing.js';
import { clock } from '../../core/platform/clock.js';
import { BusyUntilError } from '../../core/platform/busy-until.js';
import { recordCallStarted } from '../../core/domain/calls/record-call-events.js';
import { ownerRefusal } from '../../core/domain/calls/call-owner.js';

const DEFAULT_RATE_LIMIT_MS = 5000;

/** Places one outbound call (job id = call_id). */
export const placeCall: JobProcessor<PlaceCallJob> = async (job, { services, attempt, token }) => {
  const { callId, firm, lost } = job.data;
  try {
    const dial = await placeOutboundCall(
      services,
      callId,
      attempt,
      jobRef(QUEUE.calls, job.id ?? callId),
      lost === true,
    );
    const outcome = dial.outcome;
    if (outcome === 'deferred') {
      // The dial gate: outside the callee's hours or the number's cap reached; wait until then.
      return await park(job, token, clock.wallTimeOf(dial.deferredUntil ?? clock.now()), services.log);
    }
    if (outcome === 'campaign_paused') {
      // Parked with the campaign's other jobs: its resume (or cancel) wakes them to look again.
      return await parkWhilePaused(
        services,
        job,
        token,
        dial.campaignId!,
        jobRef(QUEUE.calls, job.id ?? callId),
      );
    }
    // Blocked (dial_blocked) or lost (dial_failed): the call has ended; its slot frees, its
    // campaign lead settles.
    if (outcome === 'blocked' || outcome === 'lost') await afterDialFailed(services, callId);
    if (outcome === 'waiting_for_slot') {
      // The firm is at max_concurrent_calls: wait, parked, until a call of the firm ends.
      return await park(job, token, Date.now() + SLOT_WAIT_SAFETY_MS, services.log, () =>
        wakeDialWaiters(services, firm),
      );
    }
    // Finished before this run: a dial that failed for good in an attempt that died before its
    // end hook (markDialFailed, then afterDialFailed) had run; the hook is idempotent.
    if (outcome === 'already_finished') await afterDialFailed(services, callId);
    return { outcome };
  } catch (err) {
    // Not yet (another attempt's dial under a live lease): the runner parks the job.
    if (err instanceof DelayedError || err instanceof BusyUntilError) throw err;
    if (err instanceof ProviderError && err.kind === 'rate_limited') {
      // The provider is saturated: pause the whole queue instead of failing this job.
      await services.queues[QUEUE.calls].rateLimit(err.retryAfterMs ?? DEFAULT_RATE_LIMIT_MS);
      throw Worker.RateLimitError();
    }
    if (err instanceof ProviderError && err.kind === 'rejected') {
      await markDialFailed(services, firm, callId, err.message);
      await afterDialFailed(services, callId);
      throw new UnrecoverableError(err.message);
    }
    if (attempt.lastAttempt) {
      await markDialFailed(
        services,
        firm,
        callId,
        `Gave up after ${job.attemptsMade + 1} attempts: ${(err as Error).message}`,
      );
      await afterDialFailed(services, callId);
    }
    throw err;
  }
};

/** A dial that failed for good ends the call (status error): its slot frees, its campaign lead settles. */
async function afterDialFailed(services: Services, callId: string): Promise<void> {
  const call = await callsCollection(services.mongo.db).findOne({ _id: callId });
  if (call !== null) await onCallFinished(services, call);
}

/**
 * The event applied under its call's lock: to the call its metadata names (ours when we placed
 * it), in one command in the usual case, else read once under the lock; else to the one the
 * provider's id leads to, or a new inbound call (core/domain/calls/call-events.ts).
 * `beforeWrite`: runs with the call as it is about to be written, before its write; the call is
 * then always read first (not written in one command).
 */
async function applyEvent(
  services: Services,
  data: CallEventJob,
  beforeWrite?: (next: CallDoc) => Promise<void>,
): Promise<AppliedCallEvent> {
  const { db } = services.mongo;
  const named = data.call.metadata?.call_id;
  if (named !== undefined) {
    const applied = await withCallLock(services, data.firm, named, async () => {
      // The usual case in one command; the rest from a read of the call, as before.
      if (beforeWrite === undefined) {
        const written = await applyNamedCallEvent(db, data, named);
        if (written !== null) return written;
      }
      const read = await callNamedByEvent(db, data.firm, data.call);
      return read === null ? null : applyCallEvent(db, data, named, read, beforeWrite);
    });
    if (applied !== null) return applied;
  }
  const callId = await callIdByProvider(db, data.firm, data.call);
  return withCallLock(services, data.firm, callId, () =>
    applyCallEvent(db, data, callId, undefined, beforeWrite),
  );
}

/**
 * Applies one voice-provider webhook event to our call record (job id = firm + event + call id),
 * one writer of the call at a time, so status only moves forward on every store. A call_analyzed
 * event then starts the call's pipeline (extraction, lead, CRM, email, team chat); a repeated
 * delivery starts it again, which finds its steps done. call_started records call.started (a
 * finished call's call.ended comes from onCallFinished). call_ended and call_analyzed also look
 * for an opt-out in the person's turns of the transcript (core/domain/compliance/opt-out-listing.ts).
 */
export const callEvent: JobProcessor<CallEventJob> = async (job, { services }) => {
  const data = job.data;
  if (data.owner_unchecked === true) {
    // Taken under the platform's key while MongoDB was down: applied only if the call is the
    // firm's, as the receiver would have checked (a 403 then); another firm's is dropped.
    const refusal = await ownerRefusal(services.mongo.db, data.firm, data.call);
    if (refusal !== null) {
      services.log.warn(
        { firm: data.firm, provider_call_id: data.call.call_id, event: data.event, reason: refusal },
        'call event dropped: signed with the platform key, taken while MongoDB was down, not the firm’s call',
      );
      return { dropped: 'not_the_firms_call' };
    }
  }
  // An opt-out in the person's turns puts their number on the firm's do-not-call list (the
  // entry's _id is the claim: call_ended and call_analyzed both look, the first lists it). When
  // the event's own transcript holds one, it is listed before the call's write: a client that
  // sees the call ended in get-call finds the number on the list, and a new call to it refused.
  const scanned =
    data.event === 'call_started' || data.call.transcript === undefined
      ? undefined
      : scanTranscript(data.call.transcript);
  const first: { listing?: OptOutListing } = {};
  const beforeWrite =
    scanned?.found.optOut === true
      ? async (next: CallDoc) => {
          first.listing = await listCallOptOut(services, next, scanned);
        }
      : undefined;
  const { call, advanced } = await applyEvent(services, data, beforeWrite);
  const optOut =
    data.event === 'call_started'
      ? undefined
      : (first.listing ?? (await listCallOptOut(services, call, scanned)));
  // call.started whenever this is the provider's call_started (its key makes a repeat a no-op).
  if (data.event === 'call_started') await recordCallStarted(services, call, data.received_at);
  // Whenever the call is finished (not only when this event finished it): the hook is
  // idempotent, and a retried job must not skip it. After the opt-out, which a campaign's kill
  // switch counts before the call's slot frees.
  if (call.finished) {
    await onCallFinished(services, call, {
      optedOut: optOut === 'listed' || optOut === 'already_listed',
    });
  }
  // The analysis (and with it the effects) starts only here, after onCallFinished has recorded
  // call.ended: recordCallEnded reads no effects for it (core/domain/calls/record-call-events.ts).
  if (data.event === 'call_analyzed') {
    await startCallAnalysis(services, call.firm, call._id, analysisDigest(data.call));
  }
  return {
    call_id: call._id,
    status: call.status,
    advanced,
    ...(optOut === undefined ? {} : { opt_out: optOut }),
  };
};
