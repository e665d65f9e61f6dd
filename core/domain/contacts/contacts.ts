import { createHash } from 'node:crypto';
import type { Db, Filter } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/db/keyset-cursor.js';
import type { ContactFields } from './contact-row.js';
import { prefixPattern, queryPrefixes } from './search-terms.js';

// Contacts of a firm, and the key documents that make a phone or an email belong to at most
// one contact of a firm: `<firm>|phone|<E.164>` and `<firm>|email|<address>`, claimed by
// inserting them (a unique _id is the one thing FerretDB enforces atomically).

export interface ContactDoc extends ContactFields {
  _id: string;
  firm: string;
  /** Folded prefixes for ?q= (search-terms.ts). */
  search_terms: string[];
  /** The import that created the contact. */
  import_id: string;
  /** When its source (a synced phone system or CRM) said the contact was removed. */
  deleted_at?: Date | null;
  created_at: Date;
}

export type ContactKeyKind = 'phone' | 'email';

export interface ContactKeyDoc {
  /** `<firm>|<kind>|<value>`. */
  _id: string;
  firm: string;
  kind: ContactKeyKind;
  value: string;
  /** The contact holding the phone or email. */
  contact_id: string;
  /** The import that claimed it: a retried import tells its own claims from others'. */
  import_id: string;
  /** `<import_id>#<n>`: the insertMany that claimed it; releases are deleted by batch. */
  claim_batch: string;
  created_at: Date;
}

export const contactsCollection = (db: Db) => collection<ContactDoc>(db, COLLECTIONS.contacts);
export const contactKeysCollection = (db: Db) => collection<ContactKeyDoc>(db, COLLECTIONS.contactKeys);

/** The _id of the key document of a firm's phone (E.164) or email (normalised). */
export const contactKeyId = (firm: string, kind: ContactKeyKind, value: string): string =>
  `${firm}|${kind}|${value}`;

/**
 * A firm's contacts, newest first (ties by id, descending), by keyset over {firm, created_at,
 * _id}: contacts imported later sort before any cursor, so paging never repeats or skips one.
 * The cursor is bound to the firm and the query (another q: 400 invalid_cursor).
 */
export async function listContacts(
  db: Db,
  secret: string,
  firm: string,
  options: { q?: string; limit: number; cursor?: string },
): Promise<{ contacts: ContactDoc[]; next_cursor: string }> {
  const q = options.q?.trim() ?? '';
  const scope = q === '' ? 'list-contacts' : `list-contacts:${createHash('sha256').update(q).digest('hex')}`;
  const filter: Filter<ContactDoc> = { firm };
  const prefixes = q === '' ? [] : queryPrefixes(q);
  // One condition per word ($all with regexes is not supported by FerretDB).
  if (prefixes.length > 0)
    filter.$and = prefixes.map((p) => ({ search_terms: { $regex: prefixPattern(p) } }));
  if (options.cursor) {
    const { t, i } = decodeCursor(secret, scope, firm, options.cursor);
    if (typeof t !== 'number' || typeof i !== 'string') throw invalidCursor();
    const at = new Date(t);
    filter.$or = [{ created_at: { $lt: at } }, { created_at: at, _id: { $lt: i } }];
  }
  const rows = await contactsCollection(db)
    .find(filter)
    .sort({ created_at: -1, _id: -1 })
    .limit(options.limit + 1)
    .toArray();
  const page = rows.slice(0, options.limit);
  const last = page[page.length - 1];
  const next_cursor =
    rows.length > options.limit && last !== undefined
      ? encodeCursor(secret, scope, firm, { t: last.created_at.getTime(), i: last._id })
      : '';
  return { contacts: page, next_cursor };
}
