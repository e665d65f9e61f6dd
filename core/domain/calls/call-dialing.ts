import type { Services } from '../../wiring/services.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import type { Attempt, EffectOutcome } from '../../platform/db/effect-records.js';
import {
  ProviderError,
  type PlaceCallRequest,
  type ProviderCall,
} from '../../integrations/voice/provider.js';
import { DEFAULT_INTAKE_QUESTIONS, findAgent } from '../agents/agents.js';
import { getFirm } from '../firms/firms.js';
import { FINISHED_RANK, callsCollection, type CallDoc } from './calls.js';
import { callSubject, withCallLock } from './call-lock.js';
import { linkProviderCall } from './call-keys.js';
import { voiceWebhookSecret } from './webhook-secret.js';
import { passDialTurn } from '../pacing/dial-slots.js';
import { decideAtDial } from '../compliance/dial-gate.js';
import { findDncEntry } from '../compliance/dnc-store.js';
import { noteCampaignDial } from '../campaigns/kill-switch.js';
import { findCampaign } from '../campaigns/campaign-store.js';
import { storableText } from '../../platform/text.js';
import { countLeadDialled } from '../campaigns/campaign-progress.js';
import { dialOver, dialStarting, numberDialOver, numberDialStarting } from './dials-under-way.js';

// Placing an outbound call with the provider, at most once per call_id: the dial is an effect
// on the call (core/platform/db/effect-recorder.ts). It is marked before the provider is called; when a
// later attempt finds the mark without a recorded outcome (a crash, a timeout, a 5xx), it asks
// the provider for a call carrying our call id before dialling again.

type DialOutcome =
  | 'placed'
  | 'found_at_provider'
  | 'already_placed'
  | 'already_finished'
  | 'missing'
  | 'waiting_for_slot'
  /** The dial gate deferred it: the job waits until `deferredUntil` (the gate's clock). */
  | 'deferred'
  /** The dial gate blocked it: the call has ended (`error`, disconnection_reason `dial_blocked`). */
  | 'blocked'
  /** Its campaign is paused: the job parks among the campaign's parked jobs until a resume. */
  | 'campaign_paused'
  /** Its job was lost before any dial and a repeat of its request may have made another: ended. */
  | 'lost';

/**
 * What the dial came to; `deferredUntil` with 'deferred' (the gate's clock, core/platform/clock.ts),
 * `campaignId` with 'campaign_paused'.
 */
export interface DialAttemptResult {
  outcome: DialOutcome;
  deferredUntil?: number;
  campaignId?: string;
}

/** The dial's result: the provider's call, or why it was held back (`heldBack`, below). */
type DialResult = { provider_call_id: string } | HeldBackDial;

/** A dial held back by a rule that blocked it after an earlier attempt's allow (its record's result). */
interface HeldBackDial {
  blocked: string;
  message: string;
}

/** The error_message of a call ended undialled by the lost-call sweep (docs/calls.md#lost-calls). */
export const LOST_DIAL_MESSAGE =
  'lost_dial: the job that places this call was lost before it dialled (a Redis failover, or a crash before the job was added); it was not dialled, since a repeat of the request without an Idempotency-Key may have made another call';

/** The dial's outcome; the provider's id is linked to our call first, so it is findable once recorded. */
async function placed(
  services: Services,
  call: CallDoc,
  provider: ProviderCall,
): Promise<EffectOutcome<DialResult>> {
  await linkProviderCall(services.mongo.db, call, provider.providerCallId);
  return {
    state: 'done',
    result: { provider_call_id: provider.providerCallId },
    alsoSet: { provider_call_id: provider.providerCallId, updated_at: new Date() },
  };
}

/**
 * Dials the call once the dial gate allows it (core/domain/compliance/dial-gate.ts: the rules
 * again, then one of its firm's dial slots and the number's frequency cap together):
 * 'waiting_for_slot' when the firm is at max_concurrent_calls — `waiter` (the job's parking
 * reference) is then in line for a slot, and the caller parks the job; 'deferred' (the job
 * waits until the instant) or 'blocked' (the call ends) as the gate decides.
 */
export async function placeOutboundCall(
  services: Services,
  callId: string,
  attempt: Attempt,
  waiter: string,
  /** The lost-call sweep added this job (PlaceCallJob.lost). */
  lost = false,
): Promise<DialAttemptResult> {
  const call = await callsCollection(services.mongo.db).findOne({ _id: callId });
  if (call === null) return { outcome: 'missing' }; // the request that created it rolled back
  if (call.provider_call_id !== null) {
    // A run that died after the dial: the campaign still learns of it (once).
    await campaignLearnsOfDial(services, call);
    return { outcome: 'already_placed' };
  }
  if (call.finished) return { outcome: 'already_finished' };
  // Never marked: no job of the call ever came to its dial, so whether the request that made it
  // was answered is not known; one not repeatable may have been made again by its client. (A
  // campaign call's id is derived from its lead, also when stored before `repeatable` was.)
  const repeatable = call.repeatable === true || call.campaign_id !== undefined;
  if (lost && !repeatable && call.dial.attempts === 0) {
    await markDialFailed(services, call.firm, call._id, LOST_DIAL_MESSAGE);
    return { outcome: 'lost' };
  }
  if (call.campaign_id === undefined) return dial(services, call, attempt, waiter);
  // Registered before its campaign is looked at, until the dial is over: a pause or cancel answers
  // only once the dials under way are (core/domain/calls/dials-under-way.ts).
  const campaignId = call.campaign_id;
  await dialStarting(services, campaignId, call._id);
  try {
    const held = await campaignHoldsDial(services, call);
    if (held !== null) return held;
    return await dial(services, call, attempt, waiter);
  } finally {
    await dialOver(services, campaignId, call._id);
  }
}

/**
 * The dial attempt, registered under its number from before its do-not-call read until it is
 * over: a do-not-call addition answers only once the attempts to its numbers are
 * (core/domain/calls/dials-under-way.ts).
 */
async function dial(
  services: Services,
  call: CallDoc,
  attempt: Attempt,
  waiter: string,
): Promise<DialAttemptResult> {
  const phone = call.to_number ?? '';
  await numberDialStarting(services, call.firm, phone, call._id);
  try {
    return await dialOnce(services, call, attempt, waiter);
  } finally {
    await numberDialOver(services, call.firm, phone, call._id);
  }
}

/** The gate's decision at the dial, then the dial itself (once per call), for a call allowed so far. */
async function dialOnce(
  services: Services,
  call: CallDoc,
  attempt: Attempt,
  waiter: string,
): Promise<DialAttemptResult> {
  const callId = call._id;
  // The do-not-call read goes beside the firm's (the gate awaits it).
  const dnc = findDncEntry(services.mongo.db, call.firm, call.to_number ?? '');
  dnc.catch(() => undefined);
  const firm = await getFirm(services.mongo.db, call.firm);
  if (firm === null) return { outcome: 'missing' };
  // A call asked for through create-outbound-call waits before any campaign lead; a campaign
  // call holds its slot already (its job took it before creating the call).
  const gate = await decideAtDial(
    services,
    {
      firm,
      phone: call.to_number ?? '',
      leadTimeZone: call.lead_timezone ?? null,
      callId: call._id,
      campaignId: call.campaign_id ?? null,
      stage: 'dial',
      dnc,
    },
    waiter,
  );
  if ('answer' in gate) return { outcome: 'waiting_for_slot' };
  if (gate.decision.answer === 'defer') {
    const until = gate.decision.until;
    await Promise.all([
      passDialTurn(services, call.firm, call._id),
      // The call says when it will be dialled (get-call's scheduled_for), as one made to wait at
      // its request does: a call accepted to be dialled now is not left looking as if it were.
      call.scheduled_for === until
        ? undefined
        : callsCollection(services.mongo.db).updateOne({ _id: call._id }, { $set: { scheduled_for: until } }),
    ]);
    return { outcome: 'deferred', deferredUntil: until };
  }
  const decision = gate.decision;
  if (decision.answer === 'block' && gate.blockAfterAllow === undefined) {
    await markDialBlocked(services, call, { blocked: decision.reason, message: decision.message });
    return { outcome: 'blocked' };
  }
  // Blocked now where an earlier attempt was allowed (its dial failed; the number was put on the
  // do-not-call list since, or another rule blocks it): held back in the dial's place, so once
  // only, unless that attempt's dial is found at the provider, where the call is under way.
  const heldBack =
    decision.answer === 'block'
      ? { blocked: decision.reason, message: decision.message, record: gate.blockAfterAllow! }
      : null;

  let outcome: DialOutcome = 'already_placed';
  const dial = await runEffect(
    // Its first look from the call as this job read it: the mark is a write whose filter is the
    // dial as read (the recorder's "from what was seen"), and no read of the call under its lock.
    { ...callSubject(services, call), seen: { doc: call } },
    {
      path: 'dial',
      reconcile: async () => {
        const found = await services.voice.findCall(callId, call.firm);
        if (found === null) return null;
        outcome = 'found_at_provider';
        if (heldBack !== null) {
          services.log.warn(
            { firm: call.firm, call_id: callId, rule: heldBack.blocked },
            'dial: a rule blocks this call now, but the dial an earlier attempt was allowed is at the provider: the call goes on',
          );
        }
        return placed(services, call, found);
      },
      // A definite "no" from the provider (429, 4xx) clears the mark: the next attempt may dial at once.
      mayHaveHappened: (err) => !(err instanceof ProviderError) || err.callMayExist,
      isFinal: (err) => err instanceof ProviderError && err.kind === 'rejected',
    },
    attempt,
    async (): Promise<EffectOutcome<DialResult>> => {
      if (heldBack !== null) {
        await heldBack.record();
        return { state: 'skipped', result: { blocked: heldBack.blocked, message: heldBack.message } };
      }
      const request = await placeCallRequest(services, call);
      outcome = 'placed';
      try {
        return await placed(services, call, await services.voice.placeCall(request));
      } catch (err) {
        if (err instanceof ProviderError) throw err;
        throw new ProviderError('retryable', `The voice provider failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
    },
  );
  if (dial.state === 'skipped') {
    // Held back, here or by an attempt that died before it ended the call. (A dial the lost-call
    // sweep settled `skipped` ended its call in the same write: markDialBlocked finds it ended.)
    const result = dial.result as Partial<HeldBackDial> | null;
    if (result?.blocked === undefined) return { outcome: 'already_finished' };
    await markDialBlocked(services, call, { blocked: result.blocked, message: result.message ?? '' });
    return { outcome: 'blocked' };
  }
  await campaignLearnsOfDial(services, call);
  return { outcome };
}

/**
 * A campaign call was dialled (its provider call exists): its kill switch counts the dial attempt
 * by when it was placed (its failure, as it is learnt, counts in place: kill-switch.ts), and its
 * lead counts in `calls_placed`, once. A call created but never dialled (blocked, cancelled) is
 * not placed.
 */
async function campaignLearnsOfDial(services: Services, call: CallDoc): Promise<void> {
  await Promise.all([noteCampaignDial(services, call), countLeadDialled(services, call)]);
}

/** The dial gate blocked the call: it ends `error`, `dial_blocked`, the rule in dial_block_reason. */
function markDialBlocked(services: Services, call: CallDoc, why: HeldBackDial): Promise<void> {
  return markDialFailed(
    services,
    call.firm,
    call._id,
    `dial_blocked: ${why.blocked}: ${why.message}`,
    'dial_blocked',
    why.blocked,
  );
}

/**
 * A campaign's call is dialled only while its campaign runs. The campaign-call job looked before it
 * created the call, but the dial can come later: a moment later for a job past its last look when
 * the pause came, much later when the gate deferred it (the callee's hours closed, the number's
 * daily attempts) or the provider refused for now and the job retried. A pause answered meanwhile
 * holds the dial back (the job parks with the campaign's other parked jobs; a resume wakes it), and
 * a cancel, or a campaign gone, ends the call undialled: `dial_blocked`, `dial_block_reason:
 * "campaign_cancelled"`, its lead settled as any ended call's (docs/campaigns.md#pause-resume-cancel).
 */
async function campaignHoldsDial(services: Services, call: CallDoc): Promise<DialAttemptResult | null> {
  const campaign = await findCampaign(services.mongo.db, call.campaign_id!);
  if (campaign?.status === 'running') return null;
  // (A draft has no calls: one found so waits as a paused campaign's does.)
  if (campaign !== null && (campaign.status === 'paused' || campaign.status === 'draft')) {
    await passDialTurn(services, call.firm, call._id);
    return { outcome: 'campaign_paused', campaignId: campaign._id };
  }
  const status = campaign?.status ?? 'missing';
  await markDialFailed(
    services,
    call.firm,
    call._id,
    `dial_blocked: campaign_${status}: the campaign ended before the call was dialled`,
    'dial_blocked',
    `campaign_${status}`,
  );
  return { outcome: 'blocked' };
}

/** What the provider needs besides the call record: the agent as it plays it, and where to report. */
async function placeCallRequest(services: Services, call: CallDoc): Promise<PlaceCallRequest> {
  const request: PlaceCallRequest = {
    callId: call._id,
    firm: call.firm,
    agentId: call.agent_id ?? '',
    ...(call.provider_agent_id === undefined ? {} : { providerAgentId: call.provider_agent_id }),
    ...(call.from_number === null ? {} : { fromNumber: call.from_number }),
    toNumber: call.to_number ?? '',
    dynamicVariables: call.dynamic_variables,
  };
  if (!services.voice.playsOurScript) return request;
  const db = services.mongo.db;
  const [agent, firm] = await Promise.all([
    call.agent_id === null ? null : findAgent(db, call.agent_id),
    getFirm(db, call.firm),
  ]);
  const secret = voiceWebhookSecret(services.config, call.firm, firm?.settings.voice_webhook_secret);
  return {
    ...request,
    // A deleted agent's calls still play, with the default intake.
    agent:
      agent === null
        ? {
            agent_name: 'Intake agent',
            begin_message: 'Hello, thank you for taking my call.',
            intake_questions: DEFAULT_INTAKE_QUESTIONS,
          }
        : {
            agent_name: agent.agent_name,
            begin_message: agent.begin_message,
            intake_questions: agent.intake_questions,
          },
    ...(secret === null
      ? {}
      : {
          webhook: {
            url: `${services.config.publicBaseUrl}/api/v2/${encodeURIComponent(call.firm)}/webhook`,
            secret,
          },
        }),
  };
}

/**
 * The dial failed for good (rejected, or out of attempts) or the dial gate blocked it
 * (`dial_blocked`, the reason in error_message): the call ends as `error`.
 */
export async function markDialFailed(
  services: Services,
  firm: string,
  callId: string,
  reason: string,
  disconnection: 'dial_failed' | 'dial_blocked' = 'dial_failed',
  /** The dial gate's reason code, for a blocked dial. */
  blockReason?: string,
): Promise<void> {
  const now = new Date();
  await withCallLock(services, firm, callId, () =>
    callsCollection(services.mongo.db).updateOne(
      { _id: callId, provider_call_id: null, status_rank: { $lt: FINISHED_RANK } },
      {
        $set: {
          status: 'error',
          status_rank: FINISHED_RANK,
          finished: true,
          end_timestamp: now.getTime(),
          disconnection_reason: disconnection,
          error_message: reason.slice(0, 500),
          ...(blockReason === undefined ? {} : { dial_block_reason: blockReason }),
          updated_at: now,
        },
      },
    ),
  );
}

/**
 * Ends an undialled call whose place-call job failed for good without ending it (the lost-call
 * sweep): `error` / `dial_failed`, and its dial record `skipped`, so that an attempt of that job
 * taken up again (a retry from Bull Board) finds the dial settled and never marks it, whenever it
 * read the call. Under the call's lock, which every mark of the dial takes: written only while
 * `stillGivenUp()` says so and the dial's record is the version `seen` (no attempt marked it since).
 * True when this wrote the end.
 */
export async function endGivenUpDial(
  services: Services,
  seen: Pick<CallDoc, '_id' | 'firm' | 'dial'>,
  reason: string,
  stillGivenUp: () => Promise<boolean>,
): Promise<boolean> {
  return withCallLock(services, seen.firm, seen._id, async () => {
    if (!(await stillGivenUp())) return false;
    const now = new Date();
    const message = `given_up: the job that places this call failed for good without ending it (${reason}); it was not dialled`;
    const written = await callsCollection(services.mongo.db).updateOne(
      {
        _id: seen._id,
        provider_call_id: null,
        status_rank: { $lt: FINISHED_RANK },
        'dial.attempts': seen.dial.attempts,
      },
      {
        $set: {
          status: 'error',
          status_rank: FINISHED_RANK,
          finished: true,
          end_timestamp: now.getTime(),
          disconnection_reason: 'dial_failed',
          error_message: storableText(message.slice(0, 500)),
          updated_at: now,
          'dial.state': 'skipped',
          'dial.finished_at': now,
          'dial.last_error': storableText(message.slice(0, 500)),
          'dial.result': { reason: 'given_up' },
          'dial.lease_token': null,
          'dial.lease_until': null,
        },
      },
    );
    return written.modifiedCount === 1;
  });
}
