import type { Db } from 'mongodb';
import type { CallEventJob, CallEventName } from '../../../jobs/calls.js';
import {
  STATUS_RANK,
  callsCollection,
  isFinished,
  newCallRecord,
  type CallAnalysis,
  type CallDoc,
  type CallStatus,
} from './calls.js';
import { claim } from '../../platform/db/claim.js';
import { callIdForProviderCall, inboundCallId, linkProviderCall } from './call-keys.js';

// Applies one voice-provider webhook event (Retell's shape) to our call record. Events can
// come twice or out of order: status and the fields that come with it change only when the
// event raises the status rank, so a late call_started never undoes call_ended. The caller
// applies one call's events one at a time, under the call's lock (workers/processors/calls.ts),
// which keeps this true on FerretDB, whose conditional updates are not atomic.

type ProviderCallPayload = CallEventJob['call'];

interface AppliedCallEvent {
  call: CallDoc;
  /** The status update applied (false for a repeat or an out-of-order event). */
  advanced: boolean;
}

/** Applies the event to the call `callId` (see resolveCallId); the caller holds that call's lock. */
export async function applyCallEvent(db: Db, job: CallEventJob, callId: string): Promise<AppliedCallEvent> {
  const payload = job.call;
  const status = statusFor(job.event, payload);
  let call = await findOrCreateCall(db, job.firm, callId, payload);
  const rank = STATUS_RANK[status];
  const fields = fieldsFrom(payload, status, job.received_at);
  const now = new Date();
  const advanced = await callsCollection(db).updateOne(
    { _id: call._id, status_rank: { $lt: rank } },
    { $set: { ...fields, status, status_rank: rank, finished: isFinished(status), updated_at: now } },
  );
  if (job.event === 'call_analyzed') {
    const analysis = analysisFrom(payload.call_analysis);
    if (analysis !== null) {
      await callsCollection(db).updateOne(
        { _id: call._id },
        { $set: { call_analysis: analysis, updated_at: now } },
      );
    }
    // The call_analyzed effects (lead, CRM, email, team chat; CONTRACT §3.12) start from here.
  }
  call = (await callsCollection(db).findOne({ _id: call._id })) ?? call;
  return { call, advanced: advanced.modifiedCount === 1 };
}

function statusFor(event: CallEventName, payload: ProviderCallPayload): CallStatus {
  if (event === 'call_started') return 'ongoing';
  const reported = payload.call_status;
  return reported === 'not_connected' || reported === 'error' || reported === 'ended' ? reported : 'ended';
}

const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;
const str = (v: unknown, max: number): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;

/** The record fields an event carries, typed and bounded (webhook bodies are untrusted). */
function fieldsFrom(payload: ProviderCallPayload, status: CallStatus, receivedAt: number): Partial<CallDoc> {
  const fields: Partial<CallDoc> = {};
  const start = num(payload.start_timestamp);
  let end = num(payload.end_timestamp);
  if (start !== undefined) fields.start_timestamp = start;
  if (isFinished(status)) {
    // A finished call always has an end time: list-calls orders by it.
    end ??= receivedAt;
    fields.end_timestamp = end;
    const duration = num(payload.duration_ms) ?? (start !== undefined ? Math.max(0, end - start) : undefined);
    if (duration !== undefined) fields.duration_ms = duration;
  }
  const transcript = str(payload.transcript, 1_000_000);
  if (transcript !== undefined) fields.transcript = transcript;
  const reason = str(payload.disconnection_reason, 200);
  if (reason !== undefined) fields.disconnection_reason = reason;
  return fields;
}

function analysisFrom(value: unknown): CallAnalysis | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const a = value as Record<string, unknown>;
  return {
    call_summary: str(a.call_summary, 20_000) ?? null,
    user_sentiment: str(a.user_sentiment, 100) ?? null,
    call_successful: typeof a.call_successful === 'boolean' ? a.call_successful : null,
    custom_analysis_data: safeObject(a.custom_analysis_data, 0),
  };
}

/** Plain JSON data with keys MongoDB stores as given (no `$` prefix, no dots), bounded in depth. */
function safeObject(value: unknown, depth: number): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || depth > 4) return {};
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>).slice(0, 200)) {
    if (key.startsWith('$') || key.includes('.') || key.includes('\0') || key.length > 200) continue;
    const safe = safeValue(v, depth + 1);
    if (safe !== undefined) out[key] = safe;
  }
  return out;
}

function safeValue(v: unknown, depth: number): unknown {
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string') return v.slice(0, 20_000);
  if (Array.isArray(v))
    return depth > 4 ? undefined : v.slice(0, 200).map((x) => safeValue(x, depth + 1) ?? null);
  if (typeof v === 'object') return safeObject(v, depth);
  return undefined;
}

/**
 * Our call id for a provider call, by point reads only: our id in its metadata (when that call
 * is this firm's), else the key document of the provider's id, else the id an inbound call of
 * this provider call has (derived, so it is the same for every event).
 */
export async function resolveCallId(db: Db, firm: string, payload: ProviderCallPayload): Promise<string> {
  const ours = (payload.metadata as { call_id?: unknown } | undefined)?.call_id;
  if (typeof ours === 'string' && ours.length > 0 && ours.length <= 128) {
    const call = await callsCollection(db).findOne({ _id: ours }, { projection: { firm: 1 } });
    if (call !== null && call.firm === firm) return ours;
  }
  return (await callIdForProviderCall(db, firm, payload.call_id)) ?? inboundCallId(firm, payload.call_id);
}

/** The call `callId` (resolved by resolveCallId); a new inbound call when we have none. */
async function findOrCreateCall(
  db: Db,
  firm: string,
  callId: string,
  payload: ProviderCallPayload,
): Promise<CallDoc> {
  const call = await callsCollection(db).findOne({ _id: callId });
  if (call === null) return createInboundCall(db, firm, callId, payload);
  if (call.provider_call_id === null) {
    // The webhook can outrun the place-call job's own record of the provider id.
    const now = new Date();
    const dial = {
      ...call.dial,
      state: 'done' as const,
      result: { provider_call_id: payload.call_id },
      finished_at: now,
    };
    await callsCollection(db).updateOne(
      { _id: call._id },
      { $set: { provider_call_id: payload.call_id, dial, updated_at: now } },
    );
    await linkProviderCall(db, call, payload.call_id);
    return { ...call, provider_call_id: payload.call_id, dial };
  }
  return call;
}

async function createInboundCall(
  db: Db,
  firm: string,
  id: string,
  payload: ProviderCallPayload,
): Promise<CallDoc> {
  const vars: Record<string, string> = {};
  const given = payload.retell_llm_dynamic_variables;
  if (typeof given === 'object' && given !== null) {
    for (const [k, v] of Object.entries(given).slice(0, 50)) {
      if (/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(k) && ['string', 'number', 'boolean'].includes(typeof v)) {
        vars[k] = String(v).slice(0, 2000);
      }
    }
  }
  const doc = newCallRecord({
    callId: id,
    firm,
    agent_id: str(payload.agent_id, 200) ?? null,
    direction: payload.direction === 'outbound' ? 'outbound' : 'inbound',
    from_number: str(payload.from_number, 40) ?? null,
    to_number: str(payload.to_number, 40) ?? null,
    dynamic_variables: vars,
    provider: 'webhook',
    provider_call_id: payload.call_id,
    dialled: true,
  });
  if (await claim(callsCollection(db), doc)) return doc;
  return (await callsCollection(db).findOne({ _id: id })) ?? doc;
}
