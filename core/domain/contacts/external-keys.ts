import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { contactsCollection } from './contacts.js';
import { contactIdOf } from './import-rows.js';
import { replaceById } from '../../platform/db/upsert.js';

// Which contact of a firm a source's record became: key documents `<firm>|<source>|<external_id>`
// → the contact's id, written as a synced page is staged (point reads only). A later sync that hears the record changed or removed finds the
// contact by this key without searching (docs/ringcentral.md#contacts-sync).

interface ExternalKeyDoc {
  _id: string;
  firm: string;
  contact_id: string;
  created_at: Date;
}

const keys = (db: Db) => collection<ExternalKeyDoc>(db, COLLECTIONS.contactExternalKeys);
const keyId = (firm: string, source: string, externalId: string) => `${firm}|${source}|${externalId}`;

/** The contact a source's record became, if it became one (and is that record's). */
export async function contactOfExternal(
  db: Db,
  firm: string,
  source: string,
  externalId: string,
): Promise<string | null> {
  const key = await keys(db).findOne({ _id: keyId(firm, source, externalId) });
  if (key === null) return null;
  const contact = await contactsCollection(db).findOne({ _id: key.contact_id });
  return contact?.firm === firm && contact.source === source && contact.external_id === externalId
    ? contact._id
    : null;
}

/**
 * Before a page of rows is stored as the import `importId`: the key of each row with a source and
 * an external id names the contact that row will become (contact ids follow from the import and
 * the row, import-rows.ts), unless the key already names a contact that exists. A row that turns
 * out a duplicate makes no contact: its key names none, and is replaced when the record is
 * stored again. Safe to repeat.
 */
export async function planExternalKeys(
  db: Db,
  firm: string,
  importId: string,
  rows: Record<string, unknown>[],
): Promise<void> {
  for (const [index, row] of rows.entries()) {
    const source = row.source;
    const externalId = row.external_id;
    if (typeof source !== 'string' || typeof externalId !== 'string') continue;
    if ((await contactOfExternal(db, firm, source, externalId)) !== null) continue;
    // Another runner of the same sync may write this key at the same moment: replaced either way.
    await replaceById(keys(db), keyId(firm, source, externalId), {
      firm,
      contact_id: contactIdOf(importId, index),
      created_at: new Date(),
    });
  }
}

/** Marks the contact removed at its source (`deleted_at`); true when there was one to mark. */
export async function markExternalDeleted(
  db: Db,
  firm: string,
  source: string,
  externalId: string,
  at: Date,
): Promise<boolean> {
  const id = await contactOfExternal(db, firm, source, externalId);
  if (id === null) return false;
  const contact = await contactsCollection(db).findOne({ _id: id });
  if (contact === null) return false;
  if (contact.deleted_at == null)
    await contactsCollection(db).updateOne({ _id: id }, { $set: { deleted_at: at } });
  return true;
}

/** Updates a synced contact's names and company from its source (phone and email stay). */
export async function updateExternalContact(
  db: Db,
  firm: string,
  source: string,
  externalId: string,
  fields: { first_name?: string; last_name?: string; name?: string; company?: string },
): Promise<boolean> {
  const id = await contactOfExternal(db, firm, source, externalId);
  if (id === null) return false;
  const contact = await contactsCollection(db).findOne({ _id: id });
  if (contact === null) return false;
  const set: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (typeof v === 'string' && v !== '') set[k] = v;
  if (contact.deleted_at != null) set.deleted_at = null;
  if (Object.keys(set).length > 0) await contactsCollection(db).updateOne({ _id: id }, { $set: set });
  return true;
}
