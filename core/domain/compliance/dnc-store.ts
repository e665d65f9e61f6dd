import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim, duplicateKeyIndexes } from '../../platform/db/claim.js';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/db/keyset-cursor.js';
import { invalidRequest } from '../../platform/errors.js';

// A firm's do-not-call list (docs/compliance.md#do-not-call-list): one key document per number,
// `_id` = `<firm>:<E.164>`, so the dial gate's question "is this number on the firm's list?" is
// one point read by _id, and adding a number is a claim (core/platform/db/claim.ts): of any
// number of concurrent adds of one number exactly one inserts it, the others find it "already
// listed". A firm's whole list is the _id range of its prefix (firm slugs never hold ":"), which
// is also its stable page order. Entries are kept until removed; a removal is itself recorded
// (dnc_removals) before the entry goes.

export type DncSource = 'api' | 'csv' | 'call' | 'chat' | 'widget';

export interface DncEvidence {
  call_id?: string;
  chat_id?: string;
  /** The words of the opt-out, as the person said or wrote them. */
  words?: string;
}

export interface DncEntry {
  _id: string;
  firm: string;
  /** E.164. */
  phone: string;
  source: DncSource;
  reason: string | null;
  evidence?: DncEvidence;
  added_at: Date;
  /** Who added it: `platform`, `api_key:<id>`, `session:<subject>`, or `opt_out` (the person). */
  added_by: string;
}

/** A removal, kept for good: the entry as it was, who removed it, when and why. */
export interface DncRemoval {
  _id: string;
  firm: string;
  phone: string;
  entry: Omit<DncEntry, '_id'>;
  removed_at: Date;
  removed_by: string;
  /** `platform`: the platform key; `firm_request`: the firm's own token with a reason. */
  authority: 'platform' | 'firm_request';
  reason: string | null;
}

export const dncId = (firm: string, phone: string): string => `${firm}:${phone}`;

/** `added_by` of an entry the person made themselves (an opt-out heard in a call or a chat). */
export const OPT_OUT_ADDER = 'opt_out';

export const dncCollection = (db: Db) => collection<DncEntry>(db, COLLECTIONS.dncEntries);
const entries = dncCollection;
const removals = (db: Db) => collection<DncRemoval>(db, COLLECTIONS.dncRemovals);

/** Point read by _id. */
export function findDncEntry(db: Db, firm: string, phone: string): Promise<DncEntry | null> {
  return entries(db).findOne({ _id: dncId(firm, phone) });
}

/** How an entry comes to be: where from, why, what shows it, who added it. */
export interface DncAddition {
  source: DncSource;
  reason: string | null;
  evidence?: DncEvidence;
  added_by: string;
}

function entryFor(firm: string, phone: string, addition: DncAddition, at: Date): DncEntry {
  return {
    _id: dncId(firm, phone),
    firm,
    phone,
    source: addition.source,
    reason: addition.reason,
    ...(addition.evidence === undefined ? {} : { evidence: addition.evidence }),
    added_at: at,
    added_by: addition.added_by,
  };
}

/** Adds one number (E.164); true when this call listed it, false when it was listed already. */
export function addDncEntry(db: Db, firm: string, phone: string, addition: DncAddition): Promise<boolean> {
  return claim(entries(db), entryFor(firm, phone, addition, new Date()));
}

/**
 * Adds many numbers (E.164; repeats counted once) with one unordered insertMany of their key
 * documents: no read first, no write per number. A number already on the list is told by its own
 * duplicate-key error, and the others are inserted all the same.
 */
export async function addDncEntries(
  db: Db,
  firm: string,
  phones: readonly string[],
  addition: DncAddition,
): Promise<{ added: string[]; already_listed: string[] }> {
  const unique = [...new Set(phones)];
  if (unique.length === 0) return { added: [], already_listed: [] };
  const at = new Date();
  const taken = new Set<number>();
  try {
    await entries(db).insertMany(
      unique.map((phone) => entryFor(firm, phone, addition, at)),
      { ordered: false },
    );
  } catch (err) {
    const indexes = duplicateKeyIndexes(err);
    if (indexes === null) throw err;
    for (const index of indexes) taken.add(index);
  }
  const added: string[] = [];
  const already: string[] = [];
  unique.forEach((phone, i) => (taken.has(i) ? already : added).push(phone));
  return { added, already_listed: already };
}

const LIST_SCOPE = 'dnc_entries';

/**
 * A page of the firm's list in `_id` order (its numbers in E.164 text order): the range of the
 * firm's prefix after the cursor's _id. A number added meanwhile appears on a later page if it
 * sorts after the cursor, never twice; none is skipped that was listed the whole time.
 */
export async function listDncEntries(
  db: Db,
  secret: string,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ entries: DncEntry[]; next_cursor: string }> {
  const low = `${firm}:`;
  // ";" is the character after ":": the range holds exactly the _ids that start with `<firm>:`.
  const high = `${firm};`;
  let after = low;
  if (cursor) {
    const { i } = decodeCursor(secret, LIST_SCOPE, firm, cursor);
    if (typeof i !== 'string' || !i.startsWith(low)) throw invalidCursor();
    after = i;
  }
  const rows = await entries(db)
    .find({ _id: { $gt: after, $lt: high } })
    .sort({ _id: 1 })
    .limit(limit + 1)
    .toArray();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  if (rows.length <= limit || last === undefined) return { entries: page, next_cursor: '' };
  return { entries: page, next_cursor: encodeCursor(secret, LIST_SCOPE, firm, { i: last._id }) };
}

/**
 * The id of the removal of one entry: derived from the entry (its _id and when it was added), so
 * that an entry is removed once, however many requests take it off at the same moment.
 */
const removalIdOf = (entry: DncEntry): string =>
  `dncrm_${createHash('sha256').update(`${entry._id}|${entry.added_at.getTime()}`).digest('base64url').slice(0, 20)}`;

/**
 * Removes a number from the firm's list, recording the removal first (a removal is never lost:
 * a crash between the two writes leaves the number listed, and the retried request finishes it).
 * The record is a claim on the entry: of concurrent removals one records it, the others answer
 * that record (the number was taken off once). Null when the number is not on the list.
 */
export async function removeDncEntry(
  db: Db,
  firm: string,
  phone: string,
  removal: { removed_by: string; authority: DncRemoval['authority']; reason: string | null },
): Promise<DncRemoval | null> {
  const entry = await findDncEntry(db, firm, phone);
  if (entry === null) return null;
  // The person's own opt-out (heard in a call or a chat): only the person can take it back, so
  // whoever removes it says how they did (47 CFR 64.1200(d)(3), (d)(6)); kept with the removal.
  if (entry.added_by === OPT_OUT_ADDER && removal.reason === null) {
    throw invalidRequest(
      `${phone} is on the list because the person asked not to be called; say in reason how they took that back (for example their written consent) to remove it.`,
      [{ path: '/reason', message: "is required to remove the person's own opt-out" }],
    );
  }
  const { _id, ...kept } = entry;
  let record: DncRemoval | null = {
    _id: removalIdOf(entry),
    firm,
    phone,
    entry: kept,
    removed_at: new Date(),
    ...removal,
  };
  if (!(await claim(removals(db), record))) {
    // Another request removed this very entry (or one that died before the entry's delete).
    record = await removals(db).findOne({ _id: record._id });
    if (record === null) return null;
  }
  // This entry only: a number listed again since is another entry, with a removal of its own.
  await entries(db).deleteOne({ _id, added_at: entry.added_at });
  return record;
}
