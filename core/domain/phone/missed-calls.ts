import type ExtensionTelephonySessionsEvent from '@rc-ex/core/definitions/ExtensionTelephonySessionsEvent';
import type { Db } from 'mongodb';
import { enqueue } from '../../../jobs/define.js';
import type { MissedCallbackJob } from '../../../jobs/phone.js';
import { JOBS } from '../../../jobs/table.js';
import { clock } from '../../platform/clock.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { AppError } from '../../platform/errors.js';
import type { Services } from '../../wiring/services.js';
import { getFirmAgent } from '../agents/agents.js';
import { registerOutboundCall } from '../calls/calls.js';
import { requestGate } from '../calls/request-gate.js';
import { parseDialable } from '../contact-points/phones.js';
import { contactKeyId, contactKeysCollection, contactsCollection } from '../contacts/contacts.js';
import { getFirm } from '../firms/firms.js';
import { replaceById } from '../../platform/db/upsert.js';

// Missed calls on a firm's phone system, called back by the firm's agent
// (docs/ringcentral.md#missed-call-callbacks). A telephony-sessions event whose inbound party is
// `missedCall` from an outside number (not an extension) is a missed call: claimed once by
// `<firm>|<telephonySessionId>` (RingCentral sends several events per session), then a delayed job
// (delay_seconds, default 60) decides, in order: the setting still on; the caller has not called in
// and been answered since (an answered inbound party of the same number, kept as a key document);
// not a known client the firm excludes; not called back within 4 hours (below); then the call is
// registered exactly as create-outbound-call registers one — the destination rule, the compliance
// gate (a deferred number is scheduled for when it may be called, a blocked one is not called) —
// with dynamicVariables saying it is a callback and naming the missed call. The missed call's
// record keeps the outcome and the callback's call_id.
//
// At most one callback per caller per 4 hours, without an atomic update: each callback inserts a
// claim `<firm>|<caller>|<n>` for its 4-hour window n (of the callback's time), then reads the
// claims of windows n-1 and n+1. Two callbacks less than 4 hours apart fall in the same window (the
// second insert fails) or in adjacent ones; each inserted before it read, so the later reader sees
// the other, and the earlier callback (by time, then id) wins; the loser removes its claim.

export const CALLBACK_SPACING_MS = 4 * 3600_000;
export const DEFAULT_CALLBACK_DELAY_SECONDS = 60;

export type MissedCallOutcome =
  | 'pending'
  | 'called'
  | 'scheduled'
  | 'blocked'
  | 'skipped_disabled'
  | 'skipped_called_in'
  | 'skipped_known_client'
  | 'skipped_recent_callback'
  | 'failed';

export interface MissedCallDoc {
  /** `<firm>|<telephonySessionId>`. */
  _id: string;
  firm: string;
  session_id: string;
  caller: string;
  /** The firm's number that was called. */
  called: string | null;
  at: Date;
  outcome: MissedCallOutcome;
  reason: string | null;
  callback_call_id: string | null;
  created_at: Date;
  decided_at: Date | null;
}

interface CallbackClaimDoc {
  /** `<firm>|<caller>|<4-hour window>`. */
  _id: string;
  firm: string;
  missed_call_id: string;
  at: Date;
}

interface InboundAnswerDoc {
  /** `<firm>|<caller>`. */
  _id: string;
  firm: string;
  at: Date;
}

export const missedCallsCollection = (db: Db) => collection<MissedCallDoc>(db, COLLECTIONS.missedCalls);
const callbackClaims = (db: Db) => collection<CallbackClaimDoc>(db, COLLECTIONS.missedCallCallbacks);
const inboundAnswers = (db: Db) => collection<InboundAnswerDoc>(db, COLLECTIONS.inboundAnswers);

type Party = NonNullable<NonNullable<ExtensionTelephonySessionsEvent['body']>['parties']>[number];

/** An outside caller's number (E.164), or null for an extension, an unknown or a withheld number. */
function outsideCaller(party: Party): string | null {
  const from = party.from;
  if (from === undefined || (from.extensionId !== undefined && from.extensionId !== '')) return null;
  const number = from.phoneNumber;
  if (typeof number !== 'string') return null;
  return parseDialable(number)?.e164 ?? null;
}

export interface PhoneEventResult {
  missed: number;
  answered: number;
}

/**
 * One telephony-sessions event of the firm: answered inbound parties recorded (the caller called
 * in), missed ones claimed and their callback job enqueued with the firm's delay.
 */
export async function receivePhoneEvent(
  services: Services,
  firm: string,
  event: ExtensionTelephonySessionsEvent,
): Promise<PhoneEventResult> {
  const db = services.mongo.db;
  const result: PhoneEventResult = { missed: 0, answered: 0 };
  const body = event.body;
  const sessionId = body?.telephonySessionId ?? body?.sessionId;
  if (body === undefined || !Array.isArray(body.parties) || typeof sessionId !== 'string') return result;
  const at = new Date(Date.parse(body.eventTime ?? event.timestamp ?? '') || Date.now());
  for (const party of body.parties) {
    if (party.direction !== 'Inbound') continue;
    const caller = outsideCaller(party);
    if (caller === null) continue;
    if (party.status?.code === 'Answered') {
      const id = `${firm}|${caller}`;
      const held = await inboundAnswers(db).findOne({ _id: id });
      if (held === null || held.at < at) {
        await replaceById(inboundAnswers(db), id, { firm, at });
      }
      result.answered += 1;
      continue;
    }
    if (party.missedCall !== true) continue;
    const settings = (await getFirm(db, firm))?.settings.missed_call_callback;
    if (settings?.enabled !== true) continue;
    const missed: MissedCallDoc = {
      _id: `${firm}|${sessionId}`,
      firm,
      session_id: sessionId,
      caller,
      called: parseDialable(party.to?.phoneNumber ?? '')?.e164 ?? null,
      at,
      outcome: 'pending',
      reason: null,
      callback_call_id: null,
      created_at: new Date(),
      decided_at: null,
    };
    if (!(await claim(missedCallsCollection(db), missed))) continue; // another event of the session
    const delayMs = (settings.delay_seconds ?? DEFAULT_CALLBACK_DELAY_SECONDS) * 1000;
    try {
      await enqueue(
        services.queues,
        JOBS.missedCallback,
        { firm, missedCallId: missed._id },
        { delay: delayMs },
      );
    } catch (err) {
      // Not enqueued: RingCentral's retry of this delivery must find the missed call unclaimed.
      await missedCallsCollection(db).deleteOne({ _id: missed._id });
      throw err;
    }
    result.missed += 1;
  }
  return result;
}

const windowOf = (ms: number) => Math.floor(ms / CALLBACK_SPACING_MS);
const claimId = (firm: string, caller: string, window: number) => `${firm}|${caller}|${window}`;

/** Takes the caller's 4-hour callback turn for this missed call: its claim's id, or null when another callback holds it. */
async function takeCallbackTurn(db: Db, missed: MissedCallDoc, now: number): Promise<string | null> {
  const window = windowOf(now);
  const mine: CallbackClaimDoc = {
    _id: claimId(missed.firm, missed.caller, window),
    firm: missed.firm,
    missed_call_id: missed._id,
    at: new Date(now),
  };
  if (!(await claim(callbackClaims(db), mine))) {
    const held = await callbackClaims(db).findOne({ _id: mine._id });
    // A retry of this job finds its own claim.
    return held?.missed_call_id === missed._id ? mine._id : null;
  }
  for (const neighbour of [window - 1, window + 1]) {
    const other = await callbackClaims(db).findOne({ _id: claimId(missed.firm, missed.caller, neighbour) });
    if (other === null || Math.abs(other.at.getTime() - now) >= CALLBACK_SPACING_MS) continue;
    const earlier =
      other.at.getTime() < now || (other.at.getTime() === now && other.missed_call_id < missed._id);
    if (earlier) {
      await callbackClaims(db).deleteOne({ _id: mine._id, missed_call_id: missed._id });
      return null;
    }
  }
  return mine._id;
}

/** Whether the caller is a synced contact (Clio or RingCentral) of the firm, not removed. */
async function isKnownClient(db: Db, firm: string, caller: string): Promise<boolean> {
  const key = await contactKeysCollection(db).findOne({ _id: contactKeyId(firm, 'phone', caller) });
  if (key === null) return false;
  const contact = await contactsCollection(db).findOne({ _id: key.contact_id });
  return (
    contact?.firm === firm &&
    (contact.source === 'clio' || contact.source === 'ringcentral') &&
    contact.deleted_at == null
  );
}

async function decide(
  db: Db,
  missed: MissedCallDoc,
  outcome: MissedCallOutcome,
  reason: string | null,
  callId: string | null = null,
): Promise<MissedCallOutcome> {
  await missedCallsCollection(db).updateOne(
    { _id: missed._id },
    { $set: { outcome, reason, callback_call_id: callId, decided_at: new Date() } },
  );
  return outcome;
}

/** The callback job: decides and, when every rule allows, registers the callback call. */
export async function callBackMissedCall(
  services: Services,
  job: MissedCallbackJob,
): Promise<MissedCallOutcome> {
  const db = services.mongo.db;
  const missed = await missedCallsCollection(db).findOne({ _id: job.missedCallId });
  if (missed === null || missed.firm !== job.firm) return 'failed';
  if (missed.outcome !== 'pending') return missed.outcome;
  const firm = await getFirm(db, missed.firm);
  const settings = firm?.settings.missed_call_callback;
  if (firm === null || settings?.enabled !== true) return decide(db, missed, 'skipped_disabled', null);
  const answered = await inboundAnswers(db).findOne({ _id: `${missed.firm}|${missed.caller}` });
  if (answered !== null && answered.at >= missed.at) {
    return decide(db, missed, 'skipped_called_in', 'the caller called in again and was answered');
  }
  if (settings.exclude_known_clients === true && (await isKnownClient(db, missed.firm, missed.caller))) {
    return decide(db, missed, 'skipped_known_client', 'the caller is a known client the firm excludes');
  }
  // The service's clock (core/platform/clock.ts), as the dial gate's windows are.
  const turn = await takeCallbackTurn(db, missed, clock.now());
  if (turn === null) {
    return decide(db, missed, 'skipped_recent_callback', 'the caller was called back within 4 hours');
  }
  try {
    const agent = await getFirmAgent(db, firm._id, settings.agent_id);
    const result = await registerOutboundCall(
      services,
      {
        firm,
        agent,
        toNumber: missed.caller,
        dynamicVariables: {
          callback: true,
          call_reason: 'missed_call_callback',
          missed_call_id: missed._id,
          missed_call_at: missed.at.toISOString(),
        },
        gate: requestGate(services, firm, missed.caller, true),
      },
      // A retried job finds the call it registered: one callback per missed call.
      `missed-call|${missed._id}`.slice(0, 255),
    );
    return decide(db, missed, result.status === 'scheduled' ? 'scheduled' : 'called', null, result.call_id);
  } catch (err) {
    if (err instanceof AppError && err.status < 500) {
      // Refused for good (the gate, the destination rule, the agent gone): no callback, and the
      // caller's 4-hour turn is given back.
      await callbackClaims(db).deleteOne({ _id: turn, missed_call_id: missed._id });
      const outcome =
        err.code === 'dial_blocked' || err.code === 'destination_not_allowed' ? 'blocked' : 'failed';
      return decide(db, missed, outcome, `${err.code}: ${err.message}`.slice(0, 300));
    }
    throw err;
  }
}
