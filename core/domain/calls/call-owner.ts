import type { Db } from 'mongodb';
import type { ProviderCallSnapshot } from '../../../jobs/calls.js';
import { AppError, forbidden, isMongoUnavailable, quote } from '../../platform/errors.js';
import { firmNotFound } from '../access/access.js';
import { firmHasProviderAgent } from '../agents/agents.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';
import { callsCollection } from './calls.js';
import { callIdForProviderCall, claimProviderCallOwner, providerCallOwner } from './call-keys.js';

// Whose call a delivery signed with the platform's RETELL_API_KEY is (docs/webhooks.md#whose-call).
// That key proves Retell sent it, not which firm it is for: Retell signs every call of the shared
// account with it. So such a delivery is taken only by the firm that owns the call, by point
// reads: our own call id in its metadata (a call we placed for the firm); the provider call already
// linked to the firm; our own call id of the firm as the call's id (call-events.ts callIdByProvider
// applies the event to that call); an agent of the firm with the call's provider agent id; or the firm's number
// (from_number) as the line called (inbound) or calling (outbound). A call the firm owns by agent
// or number is then claimed for it across firms (call-keys.ts): a provider call is one firm's call,
// however many firms (by a platform's mistake) share the agent or the number.

const notThisFirms = (firm: string, why: string): AppError =>
  forbidden(
    `The call is not one of the firm ${quote(firm)}: ${why}. A delivery signed with the platform's Retell key is taken only by the firm whose agent or number the call is on; a firm's own voice_webhook_secret signs its own deliveries.`,
  );

/** The line of the firm on the call: the number called (inbound) or calling (outbound). */
function firmLines(call: ProviderCallSnapshot): (string | undefined)[] {
  if (call.direction === 'inbound') return [call.to_number];
  if (call.direction === 'outbound') return [call.from_number];
  return [call.to_number, call.from_number];
}

async function ownsByAgentOrNumber(db: Db, firm: FirmDoc, call: ProviderCallSnapshot): Promise<boolean> {
  const number = firm.settings.from_number;
  if (number !== undefined && firmLines(call).includes(number)) return true;
  if (call.agent_id === undefined) return false;
  return firmHasProviderAgent(db, firm._id, call.agent_id);
}

/** 403 unless `call` is `firm`'s (as above); claims it for the firm when it is by agent or number. */
export async function requireCallOfFirm(db: Db, firm: FirmDoc, call: ProviderCallSnapshot): Promise<void> {
  const ours = call.metadata?.call_id;
  if (ours !== undefined) {
    const placed = await callsCollection(db).findOne({ _id: ours }, { projection: { firm: 1 } });
    if (placed !== null) {
      if (placed.firm === firm._id) return;
      throw notThisFirms(firm._id, 'it was placed for another firm');
    }
  }
  if ((await callIdForProviderCall(db, firm._id, call.call_id)) !== null) return;
  // Our own call_id in call.call_id (what create-outbound-call answered): the firm's call when it
  // is; another firm's is passed over as if unknown (the checks below), never named in the answer.
  const named = await callsCollection(db).findOne({ _id: call.call_id }, { projection: { firm: 1 } });
  if (named !== null && named.firm === firm._id) return;
  const owner = await providerCallOwner(db, call.call_id);
  if (owner !== null) {
    if (owner === firm._id) return;
    throw notThisFirms(firm._id, 'another firm took it first');
  }
  if (!(await ownsByAgentOrNumber(db, firm, call))) {
    throw notThisFirms(firm._id, "neither its agent nor its number is the firm's");
  }
  if ((await claimProviderCallOwner(db, firm._id, call.call_id)) !== firm._id) {
    throw notThisFirms(firm._id, 'another firm took it first');
  }
}

/**
 * A delivery signed with the platform's key, as the receiver takes it: `checked` once
 * `requireCallOfFirm` passed (its 403, and 404 for no such firm, are thrown); `unchecked` while
 * MongoDB is unreachable, where Redis alone still takes the delivery (only with both stores down
 * is a delivery answered 503: docs/webhooks.md#mongodb-outages). The firm exists then (its sealed
 * keys in Redis let the delivery in, api/webhook-auth.ts), and the worker checks the owner before
 * it applies anything (`ownerRefusal`).
 */
export async function callOwnerAtReceipt(
  db: Db,
  slug: string,
  call: ProviderCallSnapshot,
): Promise<'checked' | 'unchecked'> {
  try {
    const firm = await getFirm(db, slug);
    if (firm === null) throw firmNotFound(slug);
    await requireCallOfFirm(db, firm, call);
    return 'checked';
  } catch (err) {
    if (isMongoUnavailable(err)) return 'unchecked';
    throw err;
  }
}

/**
 * Why a delivery taken unchecked (above) is not the firm's, as the receiver would have answered
 * it (403, or no such firm); null when it is the firm's. MongoDB errors are thrown: the job retries.
 */
export async function ownerRefusal(db: Db, slug: string, call: ProviderCallSnapshot): Promise<string | null> {
  const firm = await getFirm(db, slug);
  if (firm === null) return `The firm ${quote(slug)} does not exist.`;
  try {
    await requireCallOfFirm(db, firm, call);
    return null;
  } catch (err) {
    if (err instanceof AppError && err.status === 403) return err.message;
    throw err;
  }
}
