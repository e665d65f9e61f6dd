import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';

// Our call for a provider's call id, without a query by a field other than _id: a key document
// whose _id is the provider's id (docs/operations.md#data-access-on-ferretdb-and-mongodb). Written when
// the provider's id becomes known (the dial's answer, or the first webhook that carries our id in its
// metadata).

interface CallKeyDoc {
  /**
   * `provider|<firm>|<provider call id>`; `owner|<provider call id>` (then `firm`, no call_id);
   * or `inbound|<provider call id>` (then `firm` and `call_id`: noteInboundCall).
   */
  _id: string;
  call_id?: string;
  /** The firm a provider call belongs to (owner keys: claimProviderCallOwner; inbound keys). */
  firm?: string;
  created_at: Date;
}

const callKeys = (db: Db) => collection<CallKeyDoc>(db, COLLECTIONS.callKeys);
const providerKey = (firm: string, providerCallId: string) => `provider|${firm}|${providerCallId}`;

export async function linkProviderCall(
  db: Db,
  call: { _id: string; firm: string },
  providerCallId: string,
): Promise<void> {
  await claim(callKeys(db), {
    _id: providerKey(call.firm, providerCallId),
    call_id: call._id,
    created_at: new Date(),
  });
}

export async function callIdForProviderCall(
  db: Db,
  firm: string,
  providerCallId: string,
): Promise<string | null> {
  return (await callKeys(db).findOne({ _id: providerKey(firm, providerCallId) }))?.call_id ?? null;
}

/**
 * The one firm a provider call belongs to, across all firms: the first to claim it keeps it, so
 * one provider call becomes a call in one firm only. Returns the owner (this firm, or the one
 * that claimed it before).
 */
export async function claimProviderCallOwner(db: Db, firm: string, providerCallId: string): Promise<string> {
  const _id = `owner|${providerCallId}`;
  if (await claim(callKeys(db), { _id, firm, created_at: new Date() })) return firm;
  return (await callKeys(db).findOne({ _id }))?.firm ?? firm;
}

/** The firm that claimed a provider call (claimProviderCallOwner), if one did. */
export async function providerCallOwner(db: Db, providerCallId: string): Promise<string | null> {
  return (await callKeys(db).findOne({ _id: `owner|${providerCallId}` }))?.firm ?? null;
}

/**
 * Deterministic id from firm + provider call id, so concurrent first events create one record.
 * The record's storage key (_id) only: the API shows such a call under the provider's call id
 * (CallDoc.call_id), and finds it by that id through this hash of the asking firm (findCall).
 */
export function inboundCallId(firm: string, providerCallId: string): string {
  return `call_${createHash('sha256').update(`${firm}|${providerCallId}`).digest('base64url').slice(0, 20)}`;
}

const inboundKey = (providerCallId: string) => `inbound|${providerCallId}`;

/**
 * Notes the first firm to have an inbound call shown under `providerCallId`, for a principal of
 * no firm (the platform) to find it by that id (platformInboundCall); a claim, so the first stays.
 * Written before the call itself, so a job that dies between the two writes it again.
 */
export async function noteInboundCall(
  db: Db,
  call: { _id: string; firm: string },
  providerCallId: string,
): Promise<void> {
  await claim(callKeys(db), {
    _id: inboundKey(providerCallId),
    firm: call.firm,
    call_id: call._id,
    created_at: new Date(),
  });
}

/** The storage id of the inbound call noted first under `providerCallId` (noteInboundCall), if any. */
export async function platformInboundCall(db: Db, providerCallId: string): Promise<string | null> {
  return (await callKeys(db).findOne({ _id: inboundKey(providerCallId) }))?.call_id ?? null;
}
