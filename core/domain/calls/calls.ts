import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { conflict, invalidRequest } from '../../platform/errors.js';
import { newEffectRecord, type EffectRecord } from '../../platform/db/effect-records.js';
import { newId } from '../../platform/ids.js';
import type { Services } from '../../wiring/services.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { AgentDoc } from '../agents/agents.js';
import type { FirmDoc } from '../firms/firms.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import { doneIdempotent, runIdempotent } from '../../platform/db/idempotency.js';
import { stringifyVariables, type DynamicVariablesInput } from '../agents/dynamic-variables.js';
import { parseDialable, type Dialable } from '../contact-points/phones.js';
import { claim } from '../../platform/db/claim.js';
import type { CallEffectName } from '../../../jobs/call-analysis.js';
import type { CallerData } from '../intake/caller-data.js';
import { inboundCallId, platformInboundCall } from './call-keys.js';
import { callOutcome } from './call-outcome.js';

// A call, outbound (create-outbound-call, campaigns) or inbound (first seen in a provider
// webhook). The record's _id is our id for a call we create, and the API's `call_id`; an inbound
// call a webhook created is stored under a firm-scoped hash of the provider's id (inboundCallId)
// and shown under the provider's id itself (`call_id`, docs/webhooks.md#inbound-calls). The
// provider's own id is `provider_call_id`.

export const CALL_STATUSES = ['registered', 'ongoing', 'ended', 'not_connected', 'error'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/**
 * Status only moves forward: registered (0) → ongoing (1) → a finished status (2). Provider
 * events can arrive out of order or twice; an update applies only when it raises the rank.
 */
export const STATUS_RANK: Record<CallStatus, number> = {
  registered: 0,
  ongoing: 1,
  ended: 2,
  not_connected: 2,
  error: 2,
};
export const FINISHED_RANK = 2;

export function isFinished(status: CallStatus): boolean {
  return STATUS_RANK[status] === FINISHED_RANK;
}

interface CallAnalysis {
  call_summary: string | null;
  user_sentiment: string | null;
  call_successful: boolean | null;
  /** Retell's voicemail detection; absent on calls stored before it was kept. */
  in_voicemail?: boolean | null;
  custom_analysis_data: Record<string, unknown>;
}

/**
 * The dial, an effect recorded before the provider is called (core/platform/db/effect-recorder.ts):
 * `running` means a request may have reached the provider without its answer being recorded,
 * so a retry asks the provider (by our call id in the metadata) before dialling again.
 */
type DialRecord = EffectRecord<{ provider_call_id: string }>;

/** The caller data the call_analyzed pipeline extracted, once; every effect uses this copy. */
export interface CallExtraction extends CallerData {
  /** Who extracted it: the deterministic extractor, or OpenAI structured output. */
  extractor: 'deterministic' | 'openai';
  /** Why OpenAI's answer was not used, when it was asked and failed. */
  fallback_reason: string | null;
  /** The analysis it was extracted from (jobs/call-analysis.ts analysisDigest); absent on older calls. */
  analysis_digest?: string;
  extracted_at: Date;
}

/** The state of a call's effect as clients see it (docs/webhooks.md#effects-on-get-call). */
export type CallEffectState = 'pending' | 'done' | 'skipped' | 'failed';

export interface CallDoc {
  _id: string;
  /**
   * The id the API shows (shownCallId): _id, except for an inbound call a webhook created, whose
   * _id is inboundCallId's hash: the provider's call id (calls stored before: the hash, as _id).
   * Also the list-calls order's tie (its keyset index and its Redis index).
   */
  call_id: string;
  firm: string;
  agent_id: string | null;
  direction: 'outbound' | 'inbound';
  from_number: string | null;
  to_number: string | null;
  status: CallStatus;
  status_rank: number;
  /** status is ended, not_connected or error (indexed for list-calls). */
  finished: boolean;
  dynamic_variables: Record<string, string>;
  start_timestamp: number | null;
  end_timestamp: number | null;
  duration_ms: number | null;
  disconnection_reason: string | null;
  transcript: string | null;
  call_analysis: CallAnalysis | null;
  campaign_id?: string;
  /** For a campaign call: 1 for the lead's first call, 2 and 3 for retries after not_connected. */
  campaign_attempt?: number;
  /** The agent's id at the provider when the call was registered (Retell's override_agent_id). */
  provider_agent_id?: string;
  provider: string;
  provider_call_id: string | null;
  dial: DialRecord;
  /** call_analyzed pipeline (core/domain/call-analysis): the extraction, then one record per effect. */
  extraction?: CallExtraction;
  /**
   * The effects' records: stored in the call's CallEffectsDoc, joined in by withCallEffects
   * for what shows them (get-call, list-calls, call.* events); on the call document itself
   * only in calls stored before, until release moves them (call-effects-release.ts).
   */
  effects?: Partial<Record<CallEffectName, EffectRecord>>;
  /** The CRM effect's two steps, so a retry never creates a second contact or matter (as `effects`). */
  crm_sync?: { contact?: EffectRecord; matter?: EffectRecord };
  /** A campaign lead's own time zone, which the dial gate reads the callee's hours in. */
  lead_timezone?: string;
  /** When the call is to be dialled (ms): asked for `when_allowed` outside the callee's hours, or deferred by the gate at its dial. */
  scheduled_for?: number;
  /** The dial gate blocked the call (`dnc`, `country`, `consent`, …): it ended `error`, disconnection_reason `dial_blocked`. */
  dial_block_reason?: string;
  /**
   * The request that made the call names it again when repeated (its id derived from business
   * identity, or an Idempotency-Key): a place-call job lost before any dial is added again and the
   * call placed; without it the call is ended instead, since a repeat may have made another
   * (core/domain/calls/lost-calls.ts).
   */
  repeatable?: true;
  /** The lead of this call, once the lead effect is done. */
  lead_id?: string;
  error_message?: string;
  created_at: Date;
  updated_at: Date;
}

export const callsCollection = (db: Db) => collection<CallDoc>(db, COLLECTIONS.calls);

/** The call's id as the API, its events, its lead and its notifications show it (CallDoc.call_id). */
export const shownCallId = (call: Pick<CallDoc, '_id' | 'call_id'>): string => call.call_id ?? call._id;

/**
 * A call's effect records, in a document of their own (`_id` = the call's id), at the paths they
 * had on the call: every mark and settle of an effect rewrites this small document, not the call
 * with its transcript (core/platform/db/effect-recorder.ts, `records`).
 */
export interface CallEffectsDoc {
  _id: string;
  effects?: Partial<Record<CallEffectName, EffectRecord>>;
  crm_sync?: { contact?: EffectRecord; matter?: EffectRecord };
}

export const callEffectsCollection = (db: Db) => collection<CallEffectsDoc>(db, COLLECTIONS.callEffects);

/**
 * The call with its effects' records joined in, as get-call, list-calls and the call.* events
 * show them: one point read by `_id`, for a finished call only (effects run once the call is
 * analysed, and an analysed call is finished). The lead effect's lead is the call's `lead_id`.
 *
 * `call` was read before its records, and the analysis can land in between: it stores the
 * extraction on the call (or the call_analysis that makes it voicemail came just before), then
 * its effects write their records. Joined as read, that is a call with a lead and settled effects
 * but no caller data, or a conversation whose effects were skipped as voicemail: a state that
 * never was, and final for a client that reads until the effects settle. Records there while the
 * call reads as an unextracted conversation mean exactly that, so the call is read once more
 * (only then: the records of an analysed call come after what the analysis stored on it).
 * `read`: the call's effects document as the caller read it just now (then none is read here).
 */
export async function withCallEffects(
  db: Db,
  call: CallDoc,
  read?: { records: CallEffectsDoc | null },
): Promise<CallDoc> {
  if (!call.finished) return call;
  const records =
    read === undefined
      ? await callEffectsCollection(db).findOne({ _id: call._id }, { projection: { effects: 1 } })
      : read.records;
  // None yet, or a call stored before the records moved (release moves them): the call's own.
  if (records?.effects === undefined) return call;
  if (
    call.extraction === undefined &&
    callOutcome(call) === 'conversation' &&
    Object.keys(records.effects).length > 0
  ) {
    const now = await callsCollection(db).findOne({ _id: call._id });
    if (now !== null && now.finished) call = now;
  }
  const lead = records.effects.lead?.state === 'done' ? records.effects.lead.result?.lead_id : undefined;
  return {
    ...call,
    effects: { ...call.effects, ...records.effects },
    ...(call.lead_id === undefined && typeof lead === 'string' ? { lead_id: lead } : {}),
  };
}

/** The request stage's pass for a new call (OutboundCallInput.gate). */
export interface GatePass {
  scheduled: { at: number; delayMs: number } | null;
  record: () => Promise<unknown>;
}

interface OutboundCallInput {
  /** Read only: a request's are the read cache's own documents, frozen. */
  firm: Frozen<FirmDoc>;
  agent: Frozen<AgentDoc>;
  toNumber: string;
  dynamicVariables?: DynamicVariablesInput;
  campaignId?: string;
  campaignAttempt?: number;
  /** The lead's own time zone (a campaign lead's), kept for the dial gate. */
  leadTimeZone?: string | null;
  /**
   * A call id derived from business identity (a campaign's lead and attempt): creating the call
   * is then a claim, and a repeat returns the call that exists instead of creating a second.
   */
  callId?: string;
  /**
   * The dial gate at the request stage (create-outbound-call): run with the new call before it
   * is stored, only when a call is created (not on an idempotent repeat). It throws to refuse
   * (409 dial_blocked / dial_deferred), or returns how the call goes on: `scheduled` null to
   * dial now, else the instant (ms, the gate's clock) and the delay; `record` writes the
   * decision, run beside the call's insert (a failure of either removes the call).
   */
  gate?: (call: CallDoc) => Promise<GatePass>;
}

/** The fields a call is born with; everything the provider reports later starts empty. */
interface NewCallFields {
  callId: string;
  /** The id the API shows, when not callId (an inbound call: the provider's call id). */
  shownId?: string;
  firm: string;
  agent_id: string | null;
  direction: CallDoc['direction'];
  from_number: string | null;
  to_number: string | null;
  dynamic_variables: Record<string, string>;
  provider: string;
  provider_call_id: string | null;
  /** An inbound call was dialled by someone else: its dial is done from the start. */
  dialled: boolean;
  campaign_id?: string;
  provider_agent_id?: string;
}

/** A call record in status registered, for an outbound call we place or an inbound one we learn of. */
export function newCallRecord(fields: NewCallFields): CallDoc {
  const now = new Date();
  return {
    _id: fields.callId,
    call_id: fields.shownId ?? fields.callId,
    firm: fields.firm,
    agent_id: fields.agent_id,
    direction: fields.direction,
    from_number: fields.from_number,
    to_number: fields.to_number,
    status: 'registered',
    status_rank: STATUS_RANK.registered,
    finished: false,
    dynamic_variables: fields.dynamic_variables,
    start_timestamp: null,
    end_timestamp: null,
    duration_ms: null,
    disconnection_reason: null,
    transcript: null,
    call_analysis: null,
    ...(fields.campaign_id === undefined ? {} : { campaign_id: fields.campaign_id }),
    ...(fields.provider_agent_id === undefined ? {} : { provider_agent_id: fields.provider_agent_id }),
    provider: fields.provider,
    provider_call_id: fields.provider_call_id,
    dial:
      fields.dialled && fields.provider_call_id !== null
        ? { ...newEffectRecord(), state: 'done', result: { provider_call_id: fields.provider_call_id } }
        : newEffectRecord(),
    created_at: now,
    updated_at: now,
  };
}

export function newOutboundCall(input: OutboundCallInput, provider: string, callId = newId('call')): CallDoc {
  const doc = newCallRecord({
    callId,
    firm: input.firm._id,
    agent_id: input.agent._id,
    direction: 'outbound',
    from_number: input.firm.settings.from_number ?? null,
    to_number: input.toNumber,
    dynamic_variables: stringifyVariables(input.dynamicVariables),
    provider,
    provider_call_id: null,
    dialled: false,
    ...(input.campaignId === undefined ? {} : { campaign_id: input.campaignId }),
    ...(input.agent.provider_agent_id === undefined
      ? {}
      : { provider_agent_id: input.agent.provider_agent_id }),
  });
  if (input.leadTimeZone) doc.lead_timezone = input.leadTimeZone;
  return input.campaignAttempt === undefined ? doc : { ...doc, campaign_attempt: input.campaignAttempt };
}

/** The destination as a dialable number when the firm may call it (the rule below), else null. */
export function allowedDestination(firm: Frozen<FirmDoc>, toNumber: string): Dialable | null {
  const dialable = parseDialable(toNumber);
  return dialable !== null &&
    firm.settings.allowed_call_countries.includes(dialable.country) &&
    (dialable.costly === undefined || firm.settings.allow_premium_numbers === true)
    ? dialable
    : null;
}

/**
 * The rule for every number the service dials (docs/calls.md#which-numbers-may-be-dialled): a possible
 * number for its country (400 invalid_request), in a country of the firm's allowed_call_countries and
 * not premium-rate or shared-cost unless the platform allows them (400 destination_not_allowed). `path` names the number in the request, for the error details.
 */
function requireAllowedDestination(firm: Frozen<FirmDoc>, toNumber: string, path = '/toNumber'): Dialable {
  const dialable = parseDialable(toNumber);
  if (dialable === null) {
    throw invalidRequest(`${toNumber.slice(0, 20)} is not a possible phone number for any country.`, [
      { path, message: 'is not a possible phone number for its country' },
    ]);
  }
  const allowed = firm.settings.allowed_call_countries;
  if (!allowed.includes(dialable.country)) {
    throw invalidRequest(
      `The firm "${firm._id}" may not call numbers in ${dialable.country}; its settings.allowed_call_countries are ${allowed.join(', ') || 'empty'}.`,
      [{ path, message: `is in ${dialable.country}, which is not in allowed_call_countries` }],
      'destination_not_allowed',
    );
  }
  // Toll fraud: a call to a premium-rate or shared-cost number pays whoever holds it.
  if (dialable.costly !== undefined && firm.settings.allow_premium_numbers !== true) {
    const kind = dialable.costly === 'PREMIUM_RATE' ? 'premium-rate' : 'shared-cost';
    throw invalidRequest(
      `The firm "${firm._id}" may not call ${kind} numbers (the platform can allow them with settings.allow_premium_numbers).`,
      [{ path, message: `is a ${kind} number` }],
      'destination_not_allowed',
    );
  }
  return dialable;
}

/**
 * Registers an outbound call: the record is in MongoDB, then the place-call job (id = call_id)
 * is enqueued; if enqueueing fails the record is removed, so a 503 leaves nothing behind.
 * With an Idempotency-Key, a repeat within 24 h returns the first call and places nothing.
 * The destination rule applies first: every dial (create-outbound-call, campaigns) comes here.
 */
export async function registerOutboundCall(
  services: Services,
  input: OutboundCallInput,
  idempotencyKey?: string,
): Promise<{ call_id: string; status: 'registered' | 'scheduled'; repeated: boolean }> {
  const destination = requireAllowedDestination(input.firm, input.toNumber);
  if (services.voice.name === 'retell' && !input.firm.settings.from_number) {
    throw conflict(
      'from_number_missing',
      `The firm "${input.firm._id}" has no settings.from_number, which the voice provider needs as the caller number; set it with PATCH /api/firms/${input.firm._id}.`,
    );
  }
  const db = services.mongo.db;
  const doc = newOutboundCall({ ...input, toNumber: destination.e164 }, services.voice.name, input.callId);
  if (input.callId !== undefined || idempotencyKey !== undefined) doc.repeatable = true;
  if (input.callId !== undefined) return registerDerivedCall(services, doc);
  let status: 'registered' | 'scheduled' = 'registered';
  const create = async (): Promise<void> => {
    // The call's insert goes beside the gate's judgement (a refused call's record is removed
    // before the answer): one round trip on the way, not two.
    const inserted = callsCollection(db).insertOne(doc);
    inserted.catch(() => undefined); // awaited below, whichever way the gate answers
    let pass: GatePass | null;
    try {
      pass = input.gate === undefined ? null : await input.gate(doc);
    } catch (err) {
      await inserted
        .then(() => callsCollection(db).deleteOne({ _id: doc._id }))
        .catch((e: unknown) => services.log.error({ err: e, call_id: doc._id }, 'could not remove call'));
      throw err;
    }
    const scheduled = pass?.scheduled ?? null;
    try {
      // Both settle before either's failure is acted on: a take-back sent while the insert is
      // still on its way would find nothing, and the insert would then land, a call left behind.
      const [insert, record] = await Promise.allSettled([inserted, pass?.record()]);
      if (insert.status === 'rejected') throw insert.reason;
      if (record.status === 'rejected') throw record.reason;
      if (scheduled !== null) {
        doc.scheduled_for = scheduled.at;
        status = 'scheduled';
        await callsCollection(db).updateOne({ _id: doc._id }, { $set: { scheduled_for: scheduled.at } });
      }
      await enqueue(
        services.queues,
        JOBS.placeCall,
        { callId: doc._id, firm: doc.firm },
        scheduled === null ? undefined : { delay: scheduled.delayMs },
      );
    } catch (err) {
      await callsCollection(db)
        .deleteOne({ _id: doc._id })
        .catch((e: unknown) => services.log.error({ err: e, call_id: doc._id }, 'could not remove call'));
      throw err;
    }
  };
  if (idempotencyKey === undefined) {
    await create();
    return { call_id: doc._id, status, repeated: false };
  }
  const result = await runIdempotent(
    db,
    { scope: 'create-outbound-call', firm: doc.firm, key: idempotencyKey },
    doc._id,
    create,
    // A request that died half-way: finish its work if its call record exists.
    async (callId) => {
      const existing = await callsCollection(db).findOne({ _id: callId }, { projection: { firm: 1 } });
      if (existing === null) return false;
      await enqueue(services.queues, JOBS.placeCall, { callId, firm: existing.firm });
      return true;
    },
  );
  if (result.created) return { call_id: result.resourceId, status, repeated: false };
  return repeatedCall(db, result.resourceId);
}

/** A repeat answers `scheduled` for a call made to wait (when_allowed, or deferred at its dial since). */
async function repeatedCall(
  db: Db,
  callId: string,
): Promise<{ call_id: string; status: 'registered' | 'scheduled'; repeated: true }> {
  const first = await callsCollection(db).findOne({ _id: callId }, { projection: { scheduled_for: 1 } });
  return {
    call_id: callId,
    status: first?.scheduled_for != null ? 'scheduled' : 'registered',
    repeated: true,
  };
}

/**
 * The call a finished create-outbound-call with this Idempotency-Key made within 24 h, answered as
 * then; null when there is none. Looked up before the request is checked again: a repeat gets the
 * same call_id although its agent was deleted or its destination refused since.
 */
export async function replayedOutboundCall(
  services: Services,
  firm: string,
  idempotencyKey: string,
): Promise<{ call_id: string; status: 'registered' | 'scheduled'; repeated: true } | null> {
  const db = services.mongo.db;
  const callId = await doneIdempotent(db, { scope: 'create-outbound-call', firm, key: idempotencyKey });
  return callId === null ? null : repeatedCall(db, callId);
}

/**
 * A call whose id derives from business identity: the insert is a claim. When the call exists
 * already (a repeated job), its place-call job is enqueued again (a no-op while BullMQ knows it;
 * the dial itself happens at most once per call id) unless the call has finished.
 */
async function registerDerivedCall(
  services: Services,
  doc: CallDoc,
): Promise<{ call_id: string; status: 'registered'; repeated: boolean }> {
  const calls = callsCollection(services.mongo.db);
  if (await claim(calls, doc)) {
    try {
      await enqueue(services.queues, JOBS.placeCall, { callId: doc._id, firm: doc.firm });
    } catch (err) {
      await calls
        .deleteOne({ _id: doc._id })
        .catch((e: unknown) => services.log.error({ err: e, call_id: doc._id }, 'could not remove call'));
      throw err;
    }
    return { call_id: doc._id, status: 'registered', repeated: false };
  }
  const existing = await calls.findOne({ _id: doc._id }, { projection: { firm: 1, finished: 1 } });
  if (existing === null || existing.firm !== doc.firm) {
    throw new Error(`The call ${doc._id} was claimed but cannot be read for its firm.`);
  }
  if (!existing.finished) await enqueue(services.queues, JOBS.placeCall, { callId: doc._id, firm: doc.firm });
  return { call_id: doc._id, status: 'registered', repeated: true };
}

/**
 * The call the API shows as `callId` to `firm` (null: the platform, which sees every firm's), by
 * point reads: the call whose _id it is, when `firm` may see it; else an inbound call shown under
 * that provider call id (shownCallId): the firm's own (its _id is inboundCallId's hash of the
 * firm and the id), or for the platform the one noted first under it (platformInboundCall). Never
 * another firm's call for a firm: one whose _id is `callId` is passed over, as if absent. null
 * when there is none (the route answers 404).
 */
export async function findCall(db: Db, callId: string, firm: string | null): Promise<CallDoc | null> {
  const calls = callsCollection(db);
  const own = await calls.findOne({ _id: callId });
  if (own !== null && (firm === null || own.firm === firm)) return withCallEffects(db, own);
  const inboundId = firm === null ? await platformInboundCall(db, callId) : inboundCallId(firm, callId);
  if (inboundId === null) return null;
  const inbound = await calls.findOne({ _id: inboundId });
  if (inbound === null || (firm !== null && inbound.firm !== firm)) return null;
  return withCallEffects(db, inbound);
}
