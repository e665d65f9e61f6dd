import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { cachedRead, changeCached } from '../../platform/db/read-cache.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { sha256Hex } from '../../platform/crypto.js';

// Publishable widget keys (docs/widget.md#widget-keys): `iwpk_` + 24 random bytes. A key is no
// secret (it sits in every page that embeds the widget, and the snippet needs it), so its record
// keeps it and the API shows it; what it unlocks is bounded by the record: a widget token only
// for a page whose Origin is one of `allowed_origins`. It is found the way API keys are: by its
// SHA-256, the _id of a key document (widget_key_hashes) beside the record (widget_keys, by id);
// both are point reads through the read cache, and every change goes through changeCached, so a
// patched or deleted key takes effect on the next request on every web process.

export const WIDGET_KEY_PREFIX = 'iwpk_';
/** The most origins one key may allow (docs/widget.md#widget-keys). */
export const MAX_ALLOWED_ORIGINS = 20;

export type WidgetChallenge = 'altcha';

export interface WidgetKeyDoc {
  _id: string;
  firm: string;
  name: string;
  /** The publishable key itself: shown by the API, as the snippet carries it anyway. */
  key: string;
  key_hash: string;
  allowed_origins: string[];
  /** The agent a session chats with when it names none; null: the firm's newest agent. */
  agent_id: string | null;
  /** A proof of work a session must bring (docs/widget.md#altcha); null: none. */
  challenge: WidgetChallenge | null;
  created_at: Date;
  updated_at: Date;
}

/** The key document a publishable key is found by: `_id` is the key's SHA-256. */
interface WidgetKeyHashDoc {
  _id: string;
  key_id: string;
  firm: string;
}

export interface WidgetKeyInput {
  name: string;
  allowed_origins: string[];
  agent_id: string | null;
  challenge: WidgetChallenge | null;
}

const widgetKeys = (db: Db) => collection<WidgetKeyDoc>(db, COLLECTIONS.widgetKeys);
const widgetKeyHashes = (db: Db) => collection<WidgetKeyHashDoc>(db, COLLECTIONS.widgetKeyHashes);

/** The widget key with this id (any firm's: the caller checks the firm), or null. */
export function findWidgetKey(db: Db, id: string): Promise<WidgetKeyDoc | null> {
  return cachedRead(db, COLLECTIONS.widgetKeys, id, () => widgetKeys(db).findOne({ _id: id }));
}

/** The widget key a publishable key names, or null for one that does not exist (or was deleted). */
export async function findWidgetKeyByKey(db: Db, key: string): Promise<WidgetKeyDoc | null> {
  if (!key.startsWith(WIDGET_KEY_PREFIX)) return null;
  const hash = sha256Hex(key);
  const link = await cachedRead(db, COLLECTIONS.widgetKeyHashes, hash, () =>
    widgetKeyHashes(db).findOne({ _id: hash }),
  );
  if (link === null) return null;
  const doc = await findWidgetKey(db, link.key_id);
  return doc !== null && doc.key_hash === hash ? doc : null;
}

export async function createWidgetKey(db: Db, firm: string, input: WidgetKeyInput): Promise<WidgetKeyDoc> {
  const key = `${WIDGET_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
  const now = new Date();
  const doc: WidgetKeyDoc = {
    _id: newId('wk', 12),
    firm,
    ...input,
    key,
    key_hash: sha256Hex(key),
    created_at: now,
    updated_at: now,
  };
  await changeCached(db, () => widgetKeys(db).insertOne(doc));
  try {
    await changeCached(db, () => widgetKeyHashes(db).insertOne({ _id: doc.key_hash, key_id: doc._id, firm }));
  } catch (err) {
    await changeCached(db, () => widgetKeys(db).deleteOne({ _id: doc._id })).catch(() => {});
    throw err;
  }
  return doc;
}

/** A page of the firm's widget keys, newest first. */
export async function listWidgetKeys(
  db: Db,
  secret: string,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ keys: WidgetKeyDoc[]; next_cursor: string }> {
  const order = { primary: { field: 'created_at', kind: 'date' as const }, tie: '_id' };
  const page = await keysetPage(
    widgetKeys(db),
    { secret, scope: 'list-widget-keys', firm, order },
    { firm },
    limit,
    cursor,
  );
  return { keys: page.rows, next_cursor: page.next_cursor };
}

/**
 * The key with these fields replaced: only they are written (by _id), so a PATCH of one field
 * running beside a PATCH of another does not write back the value it read before the other's
 * (an origin removed meanwhile stays removed). Returns the key as stored after the write.
 */
export async function updateWidgetKey(
  db: Db,
  current: WidgetKeyDoc,
  changes: Partial<WidgetKeyInput>,
): Promise<WidgetKeyDoc> {
  const set: Partial<WidgetKeyDoc> = { ...changes, updated_at: new Date() };
  const result = await changeCached(db, () => widgetKeys(db).updateOne({ _id: current._id }, { $set: set }));
  if (result.matchedCount === 0) throw notFound('widget_key');
  const stored = await widgetKeys(db).findOne({ _id: current._id });
  if (stored === null) throw notFound('widget_key');
  return stored;
}

/** Deletion removes the hash's key document first: the key stops working on the very next request. */
export async function deleteWidgetKey(db: Db, doc: WidgetKeyDoc): Promise<void> {
  await changeCached(db, () => widgetKeyHashes(db).deleteOne({ _id: doc.key_hash }));
  await changeCached(db, () => widgetKeys(db).deleteOne({ _id: doc._id }));
}
