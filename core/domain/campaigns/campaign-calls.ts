import type { Services } from '../../wiring/services.js';
import { AppError } from '../../platform/errors.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CampaignCallJob } from '../../../jobs/campaigns.js';
import { findAgent } from '../agents/agents.js';
import { callsCollection, registerOutboundCall, type CallDoc } from '../calls/calls.js';
import { getFirm } from '../firms/firms.js';
import { passDialTurn, releaseDialSlot, takeDialSlot } from '../pacing/dial-slots.js';
import { decideAtRequest } from '../compliance/dial-gate.js';
import { peekAtRequest } from '../compliance/dnc-index.js';
import { clock } from '../../platform/clock.js';
import {
  advanceLead,
  leadState,
  noteWaiting,
  recordSkip,
  SKIP_REASONS,
  type LeadProgress,
  type SkipReason,
} from './campaign-progress.js';
import { isRetriedOutcome } from './campaign-retry.js';
import { queuedAtLaunch } from './campaign-destinations.js';
import { callOutcome } from '../calls/call-outcome.js';
import {
  MAX_CALL_ATTEMPTS,
  campaignCallId,
  campaignPhoneId,
  campaignPhonesCollection,
  completeIfSettled,
  findCampaign,
  type CampaignDoc,
} from './campaign-store.js';

// One lead (one distinct phone) of a campaign, one attempt: the campaign-call job. It looks at
// the campaign (paused: it parks; cancelled: it ends), asks the dial gate (core/domain/compliance:
// it waits for the callee's hours and the firm's calling window or the number's frequency cap;
// a blocked number settles the lead as failed, the reason in its dial_decisions record), takes a dial slot of the firm (else it parks until one
// frees), and creates the call through create-outbound-call's own path (registerOutboundCall:
// the destination rule, the record, the place-call job) with a call id derived from campaign +
// phone + attempt, so a repeated job never makes a second call. The call's end settles the
// lead (settleCampaignCall): a conversation → completed; not_connected, voicemail or ivr → retried
// per the campaign's retry_on (at most MAX_CALL_ATTEMPTS calls, CAMPAIGN_RETRY_DELAY_MS apart);
// otherwise failed.

export type CampaignCallStep =
  | { kind: 'done'; outcome: string }
  /** The campaign is paused: park until it resumes. */
  | { kind: 'paused' }
  /** Outside the calling window: come back when it opens. */
  | { kind: 'wait_until'; at: number }
  /** The firm is at max_concurrent_calls: the job is in line for a slot; park. */
  | { kind: 'wait_slot' };

const done = (outcome: string): CampaignCallStep => ({ kind: 'done', outcome });

/** The campaign if it is running; else the step for its state (a slot this call held is freed). */
async function lookAtCampaign(
  services: Services,
  job: CampaignCallJob,
  callId: string,
): Promise<CampaignDoc | CampaignCallStep> {
  const campaign = await findCampaign(services.mongo.db, job.campaignId);
  if (campaign !== null && campaign.status === 'running') return campaign;
  if (campaign !== null && campaign.status === 'draft') {
    throw new Error(`The campaign ${job.campaignId} is not launched yet; retrying.`);
  }
  // No call now: a slot this job holds (taken before a crash) or was woken for goes on.
  await passDialTurn(services, job.firm, callId);
  if (campaign === null) return done('campaign_missing');
  return campaign.status === 'paused' ? { kind: 'paused' } : done(campaign.status);
}

const isStep = (value: CampaignDoc | CampaignCallStep): value is CampaignCallStep => 'kind' in value;

/** A lead settles once: completed or failed, it is called no more. */
const isSettled = (state: LeadProgress | null): boolean => state === 'completed' || state === 'failed';

/** The lead can never be called (its call refused, the agent gone): it settles as failed. */
async function failLead(services: Services, job: CampaignCallJob, callId: string): Promise<void> {
  await releaseDialSlot(services, job.firm, callId);
  const { counts } = await advanceLead(services, job.campaignId, job.phone, 'failed', job.attempt > 1);
  await completeIfSettled(services, job.campaignId, counts);
}

/**
 * A lead whose call the dial gate refused for good is counted in skipped_by_reason under the
 * refusal's reason (a reason the campaign counts), then settled as failed; both are idempotent.
 * The campaign's completion is the caller's (one look per campaign). The campaign-call job's
 * request-stage block and the do-not-call sweep (core/domain/compliance/dnc-sweep.ts) count alike.
 */
export async function settleRefusedLead(
  services: Services,
  campaignId: string,
  phone: string,
  attempt: number,
  reason: string,
): Promise<void> {
  if ((SKIP_REASONS as readonly string[]).includes(reason)) {
    await recordSkip(services, campaignId, phone, reason as SkipReason);
  }
  await advanceLead(services, campaignId, phone, 'failed', attempt > 1);
}

/** Runs one campaign-call job as far as it can go now. `waiter` is the job's parking reference. */
export async function runCampaignCall(
  services: Services,
  job: CampaignCallJob,
  waiter: string,
): Promise<CampaignCallStep> {
  const db = services.mongo.db;
  const callId = campaignCallId(job.campaignId, job.phone, job.attempt);
  const first = await lookAtCampaign(services, job, callId);
  if (isStep(first)) return first;
  // A phone of a destination the launch left out is not in calls_queued: no call and no settle
  // (the campaign would complete before its counted leads). Only a fan-out of the release before
  // launch_destinations were kept adds its job (a rolling deploy); a launch that left nothing out
  // kept none, and nothing is parsed here then.
  if (!queuedAtLaunch(first.launch_destinations, job.phone)) {
    await passDialTurn(services, job.firm, callId);
    return done('not_queued_at_launch');
  }
  // The gate's Redis read (do-not-call index, attempts) goes beside the lead's and the firm's
  // (the gate below awaits it), at the instant the gate judges.
  const atMs = clock.now();
  const peek = peekAtRequest(services, job.firm, job.phone, callId, atMs);
  peek.catch(() => undefined);
  const [lead, firm, state] = await Promise.all([
    campaignPhonesCollection(db).findOne({ _id: campaignPhoneId(job.campaignId, job.phone) }),
    getFirm(db, job.firm),
    leadState(services, job.campaignId, job.phone),
  ]);
  if (lead === null) return done('not_in_campaign');
  if (lead.blocked !== undefined && lead.blocked !== null) {
    // Blocked while queued (its number was put on the do-not-call list): the lead is settled
    // already; this job ends without a call and passes on a dial turn it may have been woken for.
    await passDialTurn(services, job.firm, callId);
    await settleRefusedLead(services, job.campaignId, job.phone, job.attempt, lead.blocked.reason);
    await failLead(services, job, callId);
    return done(`blocked:${lead.blocked.reason}`);
  }
  if (isSettled(state)) {
    // A retry queued after a call that a later analysis of it found to be a conversation (or
    // any job of a lead settled since it was added): the lead is done with, so no call; a dial
    // turn it may have been woken for goes on.
    await passDialTurn(services, job.firm, callId);
    return done('lead_settled');
  }
  if (firm === null) return done('firm_missing');

  // The dial gate, request stage: the callee's hours (with the firm's calling window), the
  // do-not-call list, the number's frequency cap. The place-call job asks again before dialling.
  const gate = await decideAtRequest(services, {
    firm,
    phone: job.phone,
    leadTimeZone: lead.timezone,
    callId,
    campaignId: job.campaignId,
    stage: 'request',
    atMs,
    peek,
    consent: { purpose: first.purpose ?? 'marketing', consent: lead.consent ?? null },
  });
  if (gate.decision.answer === 'defer') {
    // The campaign says how many of its leads wait so, and until when (its GET).
    await Promise.all([
      passDialTurn(services, firm._id, callId),
      noteWaiting(services, job.campaignId, job.phone, gate.decision.until),
    ]);
    return { kind: 'wait_until', at: clock.wallTimeOf(gate.decision.until) };
  }
  if (gate.decision.answer === 'block') {
    // Counted in skipped_by_reason (the consent rule's own reason, else the gate's) before the
    // lead settles, so a campaign that completes shows every skip.
    const reason = gate.record?.consent?.skip ?? gate.decision.reason;
    await settleRefusedLead(services, job.campaignId, job.phone, job.attempt, reason);
    await failLead(services, job, callId);
    return done(`blocked:${gate.decision.reason}`);
  }

  if (!(await takeDialSlot(services, firm._id, callId, waiter))) return { kind: 'wait_slot' };

  // A repeated job (a fan-out resumed, a crash after the call was created) finds its call.
  const existing = await callsCollection(db).findOne({ _id: callId });
  if (existing !== null) {
    if (existing.finished) {
      await releaseDialSlot(services, firm._id, callId);
      await settleCampaignCall(services, existing);
      return done('already_finished');
    }
    await enqueue(services.queues, JOBS.placeCall, { callId, firm: firm._id });
    return done('already_registered');
  }

  // A last look right before the call: a pause or cancel since the first stops it now.
  const last = await lookAtCampaign(services, job, callId);
  if (isStep(last)) return last;
  const agent = await findAgent(db, last.agent_id);
  if (agent === null || agent.firm !== firm._id) {
    await failLead(services, job, callId);
    return done('agent_missing');
  }
  try {
    await registerOutboundCall(services, {
      firm,
      agent,
      toNumber: job.phone,
      dynamicVariables: lead.variables,
      campaignId: job.campaignId,
      campaignAttempt: job.attempt,
      leadTimeZone: lead.timezone,
      callId,
    });
  } catch (err) {
    // Refused for good (the firm no longer allows the country, has no from_number, ...).
    if (err instanceof AppError && err.status < 500) {
      services.log.warn({ campaign_id: job.campaignId, code: err.code }, 'campaign call refused');
      await failLead(services, job, callId);
      return done(`refused:${err.code}`);
    }
    throw err;
  }
  // Its lead counts as placed once the call is dialled (call-dialing.ts), not before: the dial
  // may still be blocked or the campaign cancelled first.
  return done('registered');
}

/**
 * The job gave up (its last attempt failed): unless its call exists — whose own end settles the
 * lead — the lead settles as failed, so the campaign can still complete.
 */
export async function abandonCampaignCall(services: Services, job: CampaignCallJob): Promise<void> {
  const callId = campaignCallId(job.campaignId, job.phone, job.attempt);
  if (
    (await callsCollection(services.mongo.db).findOne({ _id: callId }, { projection: { _id: 1 } })) !== null
  ) {
    return;
  }
  await failLead(services, job, callId);
}

/**
 * A finished call that seems to have been a conversation settles its campaign lead once its
 * analysis is in: a voicemail the agent did not detect during the call is told only by
 * call_analyzed (in_voicemail). The call's dial slot is already free, so waiting holds nothing up.
 */
export const settlesOnAnalysis = (call: CallDoc): boolean =>
  callOutcome(call) === 'conversation' && call.call_analysis === null;

/**
 * A campaign call finished (its end event, or its dial failed for good): the lead is retried
 * after an outcome in retry_on while attempts remain, else settled (a conversation once its
 * analysis is in); the campaign completes with its last lead. Idempotent: a repeated event re-adds the same retry job (same id) and moves no
 * counter.
 */
export async function settleCampaignCall(services: Services, call: CallDoc): Promise<void> {
  const campaignId = call.campaign_id;
  const phone = call.to_number;
  if (campaignId === undefined || phone === null || !call.finished) return;
  const campaign = await findCampaign(services.mongo.db, campaignId);
  if (campaign === null) return;
  const attempt = call.campaign_attempt ?? 1;
  if (settlesOnAnalysis(call)) return;
  if (isRetriedOutcome(campaign, call) && attempt < MAX_CALL_ATTEMPTS && campaign.status !== 'cancelled') {
    // A lead settles once: an analysis of its call sent again later that now says voicemail
    // (the lead completed on the first) calls the person no second time.
    if (isSettled(await leadState(services, campaignId, phone))) return;
    await advanceLead(services, campaignId, phone, 'placed', true);
    const due = (call.end_timestamp ?? Date.now()) + services.config.campaignRetryDelayMs;
    await enqueue(
      services.queues,
      JOBS.campaignCall,
      { campaignId, firm: call.firm, phone, attempt: attempt + 1 },
      { delay: due - Date.now() },
    );
    return;
  }
  // Blocked by the gate at its dial (the number listed, its hours or country refused, after the
  // call was made): a skip like a request-stage block, counted under the rule's reason.
  const blocked = call.dial_block_reason;
  if (blocked !== undefined && (SKIP_REASONS as readonly string[]).includes(blocked)) {
    await recordSkip(services, campaignId, phone, blocked as SkipReason);
  }
  // A call ended before its dial (blocked, its campaign cancelled) placed nothing; an earlier
  // attempt was dialled. (A dial the provider refused counts as placed: it was tried.)
  const dialled = call.disconnection_reason !== 'dial_blocked' || attempt > 1;
  const { counts } = await advanceLead(
    services,
    campaignId,
    phone,
    callOutcome(call) === 'conversation' ? 'completed' : 'failed',
    dialled,
  );
  await completeIfSettled(services, campaignId, counts);
}
