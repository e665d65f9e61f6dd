import type { Services } from '../../wiring/services.js';
import { clock } from '../../platform/clock.js';
import type { FirmDoc } from '../firms/firms.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import { allowedDestination } from '../calls/calls.js';
import { judgeHours, type HoursVerdict } from './calling-hours.js';
import { findDncEntry, type DncEntry } from './dnc-store.js';
import { peekAtRequest, type RequestPeek } from './dnc-index.js';
import { isTimeZone } from '../../platform/time-zone.js';
import { DAY_MS, takeSlotAndAttempt } from './frequency.js';
import {
  blockAfterAllowId,
  decisionId,
  recordDecision,
  type DialDecisionDoc,
  type DialStage,
} from './dial-decisions.js';
import { takeDialSlot } from '../pacing/dial-slots.js';
import { judgeConsent, type CampaignPurpose, type Consent } from './consent.js';
import type { DecisionConsent } from './dial-decisions.js';

// The dial gate (docs/compliance.md#the-dial-gate): every call is decided when it is requested
// (create-outbound-call, each campaign-call job, campaign retries) and again right before the
// provider is asked to dial (the place-call job), since a rule can change in between. The
// answer: allow; defer until an instant (outside the callee's hours, or the number's frequency
// cap reached); or block with a reason code. Each decision is a dial_decisions record.

/** Why a dial is refused for good. */
export type BlockReason = 'country' | 'dnc' | 'consent' | 'hours' | 'frequency';
export type DeferReason = 'hours' | 'frequency';

export type GateAnswer =
  | { answer: 'allow' }
  | { answer: 'defer'; until: number; reason: DeferReason; message: string }
  /** `retryAt`: when the rule would let the number be dialled (a direct request over the cap). */
  | { answer: 'block'; reason: BlockReason; message: string; retryAt?: number };

export interface DialRequest {
  firm: Frozen<FirmDoc>;
  /** E.164. */
  phone: string;
  /** The lead's own time zone (a campaign lead's `timezone`): narrows the zones to it. */
  leadTimeZone?: string | null;
  callId: string;
  campaignId?: string | null;
  stage: DialStage;
  /** The gate's clock (core/platform/clock.ts) unless given. */
  atMs?: number;
  /** The dial stage's do-not-call read already under way (started beside the caller's own reads). */
  dnc?: Promise<DncEntry | null>;
  /** The request stage's Redis read already under way (dnc-index.ts `peekAtRequest`), at `atMs`. */
  peek?: Promise<RequestPeek>;
  /**
   * A campaign's call: its purpose and the lead's consent, judged by the consent rule. Absent
   * (a direct call, the dial stage): no consent rule applies (docs/compliance.md#consent).
   */
  consent?: { purpose: CampaignPurpose; consent: Consent | null };
}

export interface Decided {
  decision: GateAnswer;
  record: DialDecisionDoc | null;
  /**
   * A block at the dial stage where this call's dial was allowed before (a retried job whose
   * allowed dial failed, the number put on the do-not-call list since, or another rule): the
   * caller holds the dial back unless that attempt's dial reached the provider (then the call is
   * under way, and is linked), and records the block with this when it does hold it back.
   */
  blockAfterAllow?: () => Promise<DialDecisionDoc>;
}

/**
 * Bench only (bench/dial-gate.ts): every dial allowed with no rule, no count and no record, to
 * measure what the gate costs. Nothing in the service sets it.
 */
export const gateBypass = { on: false };

/** The number's cap of attempts per rolling 24 h: the platform's, or a state's lower one. */
function attemptsCap(services: Services, hours: HoursVerdict): number {
  const platform = services.config.dialAttemptsPerDay;
  const state = services.config.complianceStateRules ? hours.attemptsPer24h : null;
  return state === null ? platform : Math.min(platform, state);
}

/**
 * The consent rule: a campaign's call to a lead without the consent its purpose needs (written
 * for marketing, any for informational) is blocked with reason `consent` (details in `consent.skip`). It applies to campaign calls at the
 * request stage, where the campaign's purpose and the lead's consent are known.
 */
function consentRule(
  services: Services,
  req: DialRequest,
): { answer: GateAnswer | null; used: DecisionConsent | null } {
  if (req.consent === undefined) return { answer: null, used: null };
  const { purpose, consent } = req.consent;
  const verdict = judgeConsent({
    purpose,
    consent,
    informationalNeedsConsent: services.config.informationalConsent,
  });
  const used: DecisionConsent = {
    purpose,
    kind: consent?.kind ?? null,
    obtained_at: consent === null ? null : new Date(consent.obtained_at),
    skip: verdict?.skip ?? null,
  };
  if (verdict === null) return { answer: null, used };
  return { answer: { answer: 'block', reason: 'consent', message: verdict.message }, used };
}

interface Judged {
  decision: GateAnswer;
  consent: DecisionConsent | null;
  hours: HoursVerdict;
  cap: number;
  attempts: number | null;
}

/**
 * The rules in order — country, do-not-call, consent, calling hours, then (at the request stage)
 * the frequency cap as it stands. At the dial stage the frequency cap is applied by the caller
 * together with the dial slot (decideAtDial). Writes nothing.
 */
export async function decideDial(services: Services, req: DialRequest): Promise<Judged> {
  const atMs = req.atMs ?? clock.now();
  const config = services.config;
  const hours = judgeHours({
    phone: req.phone,
    leadTimeZone: req.leadTimeZone ?? null,
    // The firm's calling window is read in the callee's time when the lead has a zone of its own
    // (as campaigns always have: docs/campaigns.md#calling-window), else in the firm's.
    firmTimeZone:
      req.leadTimeZone !== undefined && req.leadTimeZone !== null && isTimeZone(req.leadTimeZone)
        ? req.leadTimeZone
        : req.firm.settings.timezone,
    firmWindow: req.firm.settings.calling_window ?? null,
    atMs,
    hours: config.callingHours,
    stateRules: config.complianceStateRules,
  });
  const cap = attemptsCap(services, hours);
  const consentJudged = consentRule(services, req);
  const judged = (decision: GateAnswer, attempts: number | null = null): Judged => ({
    decision,
    consent: consentJudged.used,
    hours,
    cap,
    attempts,
  });

  if (allowedDestination(req.firm, req.phone) === null) {
    return judged({
      answer: 'block',
      reason: 'country',
      message: `The firm "${req.firm._id}" may not call this number (its country or kind is not allowed).`,
    });
  }
  // At the request: the do-not-call index and the count of attempts in one Redis step
  // (dnc-index.ts). At the dial: the list's key document in MongoDB, always.
  const { dnc, seen } =
    req.stage === 'request'
      ? await (req.peek ?? peekAtRequest(services, req.firm._id, req.phone, req.callId, atMs))
      : { dnc: await (req.dnc ?? findDncEntry(services.mongo.db, req.firm._id, req.phone)), seen: null };
  if (dnc !== null) {
    return judged({
      answer: 'block',
      reason: 'dnc',
      message: `The number is on the firm's do-not-call list.`,
    });
  }
  if (consentJudged.answer !== null) return judged(consentJudged.answer);
  if (!hours.allowed) {
    if (hours.nextAllowedMs === null) {
      return judged({
        answer: 'block',
        reason: 'hours',
        message: "No time within the next 8 days is inside the callee's calling hours and the firm's window.",
      });
    }
    return judged({
      answer: 'defer',
      reason: 'hours',
      until: hours.nextAllowedMs,
      message: `Outside the callee's calling hours (${hours.limitedBy.join(', ')}).`,
    });
  }
  if (seen !== null) {
    if (!seen.counted && seen.count >= cap && seen.oldestMs !== null) {
      return judged(frequencyDeferral(seen.oldestMs, cap), seen.count);
    }
    return judged({ answer: 'allow' }, seen.count);
  }
  return judged({ answer: 'allow' });
}

function frequencyDeferral(oldestMs: number, cap: number): GateAnswer {
  return {
    answer: 'defer',
    reason: 'frequency',
    until: oldestMs + DAY_MS,
    message: `The number has had ${cap} dial attempts in the last 24 hours (the cap); the oldest ages out at ${new Date(oldestMs + DAY_MS).toISOString()}.`,
  };
}

function decisionDoc(req: DialRequest, judged: Judged, atMs: number): DialDecisionDoc {
  const d = judged.decision;
  const until = d.answer === 'defer' ? d.until : null;
  return {
    _id: decisionId(req.callId, req.stage, d.answer, until),
    firm: req.firm._id,
    phone: req.phone,
    call_id: req.callId,
    campaign_id: req.campaignId ?? null,
    stage: req.stage,
    answer: d.answer,
    reason: d.answer === 'allow' ? null : d.reason,
    message: d.answer === 'allow' ? null : d.message,
    retry_at: until === null ? null : new Date(until),
    rules_version: judged.hours.rulesVersion,
    region: judged.hours.region,
    limited_by: judged.hours.limitedBy,
    zones: judged.hours.zones,
    attempts: judged.attempts,
    attempts_cap: judged.cap,
    consent: judged.consent,
    at: new Date(atMs),
  };
}

/**
 * The request stage (campaign-call jobs): decides, and records a refusal — the only trace of the
 * request. An allowed request is recorded by its dial-stage decision, which always follows.
 */
export async function decideAtRequest(services: Services, req: DialRequest): Promise<Decided> {
  if (gateBypass.on) return { decision: { answer: 'allow' }, record: null };
  const atMs = req.atMs ?? clock.now();
  const judged = await decideDial(services, { ...req, stage: 'request', atMs });
  if (judged.decision.answer === 'allow') return { decision: judged.decision, record: null };
  const record = await recordDecision(
    services.mongo.db,
    decisionDoc({ ...req, stage: 'request' }, judged, atMs),
  );
  return { decision: judged.decision, record };
}

/**
 * The request stage for a call not created yet (create-outbound-call): the rules are judged at
 * once — beside the request's other reads — and the decision is bound to the call id later;
 * `record` writes a refusal (an allowed call is recorded at its dial stage).
 */
export async function judgeNewCall(
  services: Services,
  req: Omit<DialRequest, 'callId' | 'stage'>,
): Promise<
  (callId: string, whenAllowed: boolean) => { decision: GateAnswer; record: () => Promise<unknown> }
> {
  if (gateBypass.on) return () => ({ decision: { answer: 'allow' }, record: async () => undefined });
  const atMs = req.atMs ?? clock.now();
  const judged = await decideDial(services, { ...req, callId: '', stage: 'request', atMs });
  return (callId, whenAllowed) => {
    const decision = asRequested(judged.decision, whenAllowed);
    return {
      decision,
      record: async () =>
        decision.answer === 'allow'
          ? undefined
          : recordDecision(
              services.mongo.db,
              decisionDoc({ ...req, callId, stage: 'request' }, { ...judged, decision }, atMs),
            ),
    };
  };
}

/**
 * A request over the frequency cap that did not ask to be made when allowed is refused: `409
 * dial_blocked` naming `frequency` (the rules that block, docs/compliance.md#frequency-caps), with the
 * instant the oldest attempt ages out. With `when_allowed` it is scheduled for then, and a
 * campaign's call waits until then, as the gate decided.
 */
function asRequested(d: GateAnswer, whenAllowed: boolean): GateAnswer {
  if (d.answer !== 'defer' || d.reason !== 'frequency' || whenAllowed) return d;
  return { answer: 'block', reason: 'frequency', message: d.message, retryAt: d.until };
}

export type DialGateStep = Decided | { answer: 'no_slot' };

/**
 * The dial stage, right before the provider is asked: the rules again, then the dial slot and
 * the frequency cap in one Redis step; the decision is recorded before the caller dials.
 * `no_slot`: the firm is at max_concurrent_calls (the waiter is in line), nothing recorded — the
 * call is decided when its turn comes. A call decided already at this stage (a retried job whose
 * attempt died after the record) keeps its terminal decision: the record's claim finds it, and
 * an `allow` goes on to the dial, whose effect record asks the provider before dialling again —
 * unless a rule blocks it now (`blockAfterAllow`): a number put on the do-not-call list between
 * a failed dial and its retry is not dialled by the retry.
 */
export async function decideAtDial(
  services: Services,
  req: DialRequest,
  waiter: string,
): Promise<DialGateStep> {
  const db = services.mongo.db;
  if (gateBypass.on) {
    return (await takeDialSlot(services, req.firm._id, req.callId, waiter, 'first'))
      ? { decision: { answer: 'allow' }, record: null }
      : { answer: 'no_slot' };
  }
  const atMs = req.atMs ?? clock.now();
  const dialReq = { ...req, stage: 'dial' as const, atMs };
  const judged = await decideDial(services, dialReq);
  if (judged.decision.answer === 'block') {
    const blocked = decisionDoc(dialReq, judged, atMs);
    const record = await recordDecision(db, blocked);
    if (record.answer === 'block') return { decision: answerOf(record), record };
    // An `allow` recorded earlier for this call (a retried job): its slot and its attempt are
    // held already; the caller finds out whether that dial reached the provider.
    return {
      decision: judged.decision,
      record,
      blockAfterAllow: () => recordDecision(db, { ...blocked, _id: blockAfterAllowId(req.callId) }),
    };
  }
  if (judged.decision.answer === 'defer') {
    return {
      decision: judged.decision,
      record: await recordDecision(db, decisionDoc(dialReq, judged, atMs)),
    };
  }
  const taken = await takeSlotAndAttempt(services, {
    firm: req.firm._id,
    max: req.firm.settings.max_concurrent_calls,
    phone: req.phone,
    callId: req.callId,
    waiter,
    atMs,
    cap: judged.cap,
  });
  if (taken.kind === 'no_slot') return { answer: 'no_slot' };
  if (taken.kind === 'capped') {
    const deferred: Judged = {
      ...judged,
      decision: frequencyDeferral(taken.oldestMs, judged.cap),
      attempts: taken.count,
    };
    return {
      decision: deferred.decision,
      record: await recordDecision(db, decisionDoc(dialReq, deferred, atMs)),
    };
  }
  const record = await recordDecision(db, decisionDoc(dialReq, { ...judged, attempts: taken.count }, atMs));
  // An earlier `block` of this call that stands (its job died before ending the call): the
  // slot just taken is freed when the caller ends the call.
  return { decision: answerOf(record), record };
}

/** The answer a recorded terminal decision (allow or block) gave. */
function answerOf(record: DialDecisionDoc): GateAnswer {
  return record.answer === 'block'
    ? { answer: 'block', reason: record.reason as BlockReason, message: record.message ?? '' }
    : { answer: 'allow' };
}
