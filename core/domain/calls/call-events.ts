import type { Db } from 'mongodb';
import type { CallEventJob, CallEventName, ProviderCallSnapshot } from '../../../jobs/calls.js';
import { claim } from '../../platform/db/claim.js';
import {
  STATUS_RANK,
  callsCollection,
  isFinished,
  newCallRecord,
  type CallDoc,
  type CallStatus,
} from './calls.js';
import { firmProviderAgentId } from '../agents/agents.js';
import { isDialFailure } from './call-outcome.js';
import { callIdForProviderCall, inboundCallId, linkProviderCall, noteInboundCall } from './call-keys.js';

// Applies one voice-provider webhook event (Retell's shape, bounded by snapshotProviderCall) to
// our call record. Events can come twice or out of order: status and the fields that come with
// it change only when the event raises the status rank, so a late call_started never undoes
// call_ended. The caller holds the call's lock (workers/processors/calls.ts), so the rank is
// compared on the document read here and every write is a point write by _id: cheap on
// FerretDB, whose conditional updates are neither atomic nor served by an index.

export interface AppliedCallEvent {
  call: CallDoc;
  /** The status update applied (false for a repeat or an out-of-order event). */
  advanced: boolean;
}

/**
 * Applies the event to the call `callId` (see resolveCallId); the caller holds that call's lock.
 * `read`: the call as the caller read it under that lock (one read, not two). `beforeWrite`: runs
 * with the call as it is about to be written, before the write (only when there is one), so what
 * must be true once a reader sees the call so (an opt-out listed) is true first.
 */
export async function applyCallEvent(
  db: Db,
  job: CallEventJob,
  callId: string,
  read?: CallDoc,
  beforeWrite?: (next: CallDoc) => Promise<void>,
): Promise<AppliedCallEvent> {
  const payload = job.call;
  const call = await findOrCreateCall(db, job.firm, callId, payload, read);
  const status = statusFor(job.event, payload);
  const rank = STATUS_RANK[status];
  const changes: Partial<CallDoc> = {};
  const advanced = rank > call.status_rank;
  if (advanced) Object.assign(changes, raisedTo(payload, status, job.received_at));
  if (job.event === 'call_analyzed' && payload.call_analysis !== undefined) {
    changes.call_analysis = payload.call_analysis;
    // The call_analyzed pipeline (core/domain/call-analysis) starts once this is stored.
  }
  if (Object.keys(changes).length === 0) return { call, advanced: false };
  changes.updated_at = new Date();
  const next = { ...call, ...changes };
  await beforeWrite?.(next);
  await callsCollection(db).updateOne({ _id: call._id }, { $set: changes });
  return { call: next, advanced };
}

/**
 * The event applied in one command to the call its metadata names, in the usual case: an event
 * that raises the call's status (call_started, call_ended), or a call_analyzed with its analysis
 * for a call already finished. The write's filter makes the checks applyCallEvent makes on the
 * call it reads first (the firm's call, the provider's id known, the status rank below the
 * event's, or for the analysis not below), and the call comes back as written: one command where
 * a read and a write were two. null when the filter does not match (no such call of this firm,
 * an event that does not advance it, an analysis that also finishes it, the webhook ahead of the
 * dial's record): applyCallEvent then applies it from a read, as before, and nothing was written.
 * The caller holds the call's lock, as every writer of a call does: FerretDB applies a filtered
 * write as a read and a write of its own, not atomically, and the lock is what keeps them together.
 */
export async function applyNamedCallEvent(
  db: Db,
  job: CallEventJob,
  callId: string,
): Promise<AppliedCallEvent | null> {
  const payload = job.call;
  const status = statusFor(job.event, payload);
  const rank = STATUS_RANK[status];
  const analysis = job.event === 'call_analyzed';
  if (analysis && payload.call_analysis === undefined) return null;
  const changes: Partial<CallDoc> = analysis
    ? { call_analysis: payload.call_analysis }
    : raisedTo(payload, status, job.received_at);
  changes.updated_at = new Date();
  const call = await callsCollection(db).findOneAndUpdate(
    {
      _id: callId,
      firm: job.firm,
      provider_call_id: { $ne: null },
      status_rank: analysis ? { $gte: rank } : { $lt: rank },
    },
    { $set: changes },
    { returnDocument: 'after' },
  );
  return call === null ? null : { call, advanced: !analysis };
}

function statusFor(event: CallEventName, payload: ProviderCallSnapshot): CallStatus {
  if (event === 'call_started') return 'ongoing';
  const reported = payload.call_status;
  // Retell tells a dial failure by its reason, whatever call_status says beside it
  // (docs/webhooks.md#answered-or-not).
  if (reported !== 'error' && isDialFailure(payload.disconnection_reason)) return 'not_connected';
  return reported === 'not_connected' || reported === 'error' || reported === 'ended' ? reported : 'ended';
}

/** What an event that raises the call to `status` sets: the status and the fields it carries. */
function raisedTo(payload: ProviderCallSnapshot, status: CallStatus, receivedAt: number): Partial<CallDoc> {
  return {
    ...fieldsFrom(payload, status, receivedAt),
    status,
    status_rank: STATUS_RANK[status],
    finished: isFinished(status),
  };
}

/** The record fields an event carries. */
function fieldsFrom(payload: ProviderCallSnapshot, status: CallStatus, receivedAt: number): Partial<CallDoc> {
  const fields: Partial<CallDoc> = {};
  const start = payload.start_timestamp;
  if (start !== undefined) fields.start_timestamp = start;
  if (isFinished(status)) {
    // A finished call always has an end time: list-calls orders by it.
    const end = payload.end_timestamp ?? receivedAt;
    fields.end_timestamp = end;
    const duration = payload.duration_ms ?? (start !== undefined ? Math.max(0, end - start) : undefined);
    if (duration !== undefined) fields.duration_ms = duration;
  }
  if (payload.transcript !== undefined) fields.transcript = payload.transcript;
  if (payload.disconnection_reason !== undefined) fields.disconnection_reason = payload.disconnection_reason;
  return fields;
}

/**
 * Our call id for a provider call, by point reads only: our id in its metadata (when that call
 * is this firm's), else callIdByProvider's steps.
 */
export async function resolveCallId(db: Db, firm: string, payload: ProviderCallSnapshot): Promise<string> {
  const ours = payload.metadata?.call_id;
  if (ours !== undefined) {
    const call = await callsCollection(db).findOne({ _id: ours }, { projection: { firm: 1 } });
    if (call !== null && call.firm === firm) return ours;
  }
  return callIdByProvider(db, firm, payload);
}

/**
 * Our call id for a provider call without its metadata, by point reads only: the key document of
 * the provider's id; else the call whose _id is that id when it is this firm's (a sender naming
 * our own call_id, as create-outbound-call answered it, in `call.call_id`); else the id an inbound
 * call of this provider call has (derived, so it is the same for every event). A call of another
 * firm is passed over as if absent: the event makes or updates this firm's inbound call, and the
 * other firm's call is neither read out nor touched (docs/webhooks.md#inbound-calls).
 */
export async function callIdByProvider(db: Db, firm: string, payload: ProviderCallSnapshot): Promise<string> {
  const linked = await callIdForProviderCall(db, firm, payload.call_id);
  if (linked !== null) return linked;
  const named = await callsCollection(db).findOne({ _id: payload.call_id }, { projection: { firm: 1 } });
  if (named !== null && named.firm === firm) return named._id;
  return inboundCallId(firm, payload.call_id);
}

/**
 * The call the event's metadata names, read whole (the caller holds that call's lock), when it
 * is this firm's; null when the event names none, or a call of no firm of ours or another's
 * (callIdByProvider then finds it). What resolveCallId's first step and the event's read of
 * the call did in two reads, in one.
 */
export async function callNamedByEvent(
  db: Db,
  firm: string,
  payload: ProviderCallSnapshot,
): Promise<CallDoc | null> {
  const ours = payload.metadata?.call_id;
  if (ours === undefined) return null;
  const call = await callsCollection(db).findOne({ _id: ours });
  return call !== null && call.firm === firm ? call : null;
}

/** The call `callId` (resolved by resolveCallId); a new inbound call when we have none. */
async function findOrCreateCall(
  db: Db,
  firm: string,
  callId: string,
  payload: ProviderCallSnapshot,
  read?: CallDoc,
): Promise<CallDoc> {
  const call = read ?? (await callsCollection(db).findOne({ _id: callId }));
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
    return { ...call, provider_call_id: payload.call_id, dial, updated_at: now };
  }
  return call;
}

/**
 * A new inbound call, stored under `id` (inboundCallId's hash) and shown under the provider's call
 * id, as the sender named it. The platform's note of it goes first (a claim, as the call's insert
 * is): a job that dies between the two makes both good when it runs again.
 */
async function createInboundCall(
  db: Db,
  firm: string,
  id: string,
  payload: ProviderCallSnapshot,
): Promise<CallDoc> {
  await noteInboundCall(db, { _id: id, firm }, payload.call_id);
  // The provider names its own agent id: the call shows ours (the one list-agents gives, whose
  // intake questions the analysis asks), else the id as sent.
  const agentId =
    payload.agent_id === undefined
      ? null
      : ((await firmProviderAgentId(db, firm, payload.agent_id)) ?? payload.agent_id);
  const doc = newCallRecord({
    callId: id,
    shownId: payload.call_id,
    firm,
    agent_id: agentId,
    direction: payload.direction === 'outbound' ? 'outbound' : 'inbound',
    from_number: payload.from_number ?? null,
    to_number: payload.to_number ?? null,
    dynamic_variables: payload.retell_llm_dynamic_variables ?? {},
    provider: 'webhook',
    provider_call_id: payload.call_id,
    dialled: true,
  });
  if (await claim(callsCollection(db), doc)) return doc;
  return (await callsCollection(db).findOne({ _id: id })) ?? doc;
}
