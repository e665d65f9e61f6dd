import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';

// Our call for a provider's call id, without a query by a field other than _id: a key document
// whose _id is the provider's id (docs/operations.md#data-access-on-ferretdb-and-mongodb). Written when
// the provider's id becomes known (the dial's answer, or the first webhook that carries our id in its
// metadata).

interface CallKeyDoc {
  /** `provider|<firm>|<provider call id>` */
  _id: string;
  call_id: string;
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

/** Deterministic id from firm + provider call id, so concurrent first events create one record. */
export function inboundCallId(firm: string, providerCallId: string): string {
  return `call_${createHash('sha256').update(`${firm}|${providerCallId}`).digest('base64url').slice(0, 20)}`;
}
