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

/** The synced client holding this phone (E.164) or email (normalised) in the firm, if any. */
export async function findKnownClient(
  db: Db,
  firm: string,
  point: { phone: string | null; email: string | null },
): Promise<KnownClient | null> {
  const keys: string[] = [];
  if (point.phone !== null) keys.push(contactKeyId(firm, 'phone', point.phone));
  if (point.email !== null) keys.push(contactKeyId(firm, 'email', point.email));
  for (const id of keys) {
    const key = await contactKeysCollection(db).findOne({ _id: id });
    if (key === null) continue;
    const contact = await contactsCollection(db).findOne({ _id: key.contact_id });
    if (contact?.firm === firm && contact.source === CLIO_SOURCE) {
      return { source: CLIO_SOURCE, contact_id: contact._id, external_id: contact.external_id ?? null };
    }
  }
  return null;
}
