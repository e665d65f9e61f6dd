import type { Db } from 'mongodb';
import { CLIO_SOURCE } from './clio-contact-row.js';
import { contactKeyId, contactKeysCollection, contactsCollection } from './contacts.js';

// A firm's known clients (docs/contacts.md#known-clients): the contacts synced from its Clio
// (source "clio", external_id = the Clio contact id). A lead whose phone or email is one of
// theirs is marked with that client when it is created. Point reads by _id only: the key
// document of the phone (then the email), then its contact.

export interface KnownClient {
  source: typeof CLIO_SOURCE;
  contact_id: string;
  /** The client's id in Clio. */
  external_id: string | null;
}

/**
 * What one unit of work (an analysed call's job) has looked up already, per contact key: its lead
 * and its CRM effect, run together, ask about the same phone and email, and the second asks no
 * store. Made per job and dropped with it, so nothing read here outlives the job.
 */
export type KnownClientReads = Map<string, Promise<KnownClient | null>>;

/** The synced client holding this phone (E.164) or email (normalised) in the firm, if any. */
export async function findKnownClient(
  db: Db,
  firm: string,
  point: { phone: string | null; email: string | null },
  reads?: KnownClientReads,
): Promise<KnownClient | null> {
  const keys: string[] = [];
  if (point.phone !== null) keys.push(contactKeyId(firm, 'phone', point.phone));
  if (point.email !== null) keys.push(contactKeyId(firm, 'email', point.email));
  for (const id of keys) {
    let client = reads?.get(id);
    if (client === undefined) {
      client = clientAtKey(db, firm, id);
      reads?.set(id, client);
    }
    const found = await client;
    if (found !== null) return found;
  }
  return null;
}

/** The synced client a contact key leads to, if any. */
async function clientAtKey(db: Db, firm: string, id: string): Promise<KnownClient | null> {
  const key = await contactKeysCollection(db).findOne({ _id: id });
  if (key === null) return null;
  const contact = await contactsCollection(db).findOne({ _id: key.contact_id });
  if (contact?.firm === firm && contact.source === CLIO_SOURCE) {
    return { source: CLIO_SOURCE, contact_id: contact._id, external_id: contact.external_id ?? null };
  }
  return null;
}
