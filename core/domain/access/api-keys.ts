import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { cachedReadShared, changeCached } from '../../platform/db/read-cache.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { sha256Hex } from '../../platform/crypto.js';

// Firm API keys: `isk_` + 32 random bytes, shown once, stored only as their SHA-256. Every
// request looks its key up by that hash, so the hash is the _id of a key document
// (api_key_hashes) beside the key's own record (api_keys, by id): both are point reads.

export const API_KEY_PREFIX = 'isk_';

export interface ApiKeyDoc {
  _id: string;
  firm: string;
  name: string;
  /** SHA-256 of the key: the key itself is shown once and never stored. */
  key_hash: string;
  /** The first characters, so a person can tell keys apart. */
  key_prefix: string;
  created_at: Date;
}

/** The key document a request's key is found by: `_id` is the key's SHA-256. */
interface ApiKeyHashDoc {
  _id: string;
  key_id: string;
  firm: string;
}

const apiKeys = (db: Db) => collection<ApiKeyDoc>(db, COLLECTIONS.apiKeys);
const apiKeyHashes = (db: Db) => collection<ApiKeyHashDoc>(db, COLLECTIONS.apiKeyHashes);

/** The key whose SHA-256 this is, or null for a key that does not exist (or was revoked). */
export async function findApiKeyByHash(
  db: Db,
  keyHash: string,
): Promise<{ id: string; firm: string } | null> {
  // The cache's own document (every request reads it, and only two of its fields): no copy.
  const doc = await cachedReadShared(db, COLLECTIONS.apiKeyHashes, keyHash, () =>
    apiKeyHashes(db).findOne({ _id: keyHash }),
  );
  return doc === null ? null : { id: doc.key_id, firm: doc.firm };
}

/** A new key of the firm: its document, and the key itself (shown once, stored only as a hash). */
export async function createApiKey(
  db: Db,
  firm: string,
  name: string,
): Promise<{ doc: ApiKeyDoc; key: string }> {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const doc: ApiKeyDoc = {
    _id: newId('key', 12),
    firm,
    name,
    key_hash: sha256Hex(key),
    key_prefix: key.slice(0, 10),
    created_at: new Date(),
  };
  await apiKeys(db).insertOne(doc);
  try {
    await apiKeyHashes(db).insertOne({ _id: doc.key_hash, key_id: doc._id, firm });
  } catch (err) {
    await apiKeys(db)
      .deleteOne({ _id: doc._id })
      .catch(() => {});
    throw err;
  }
  return { doc, key };
}

export function listApiKeys(db: Db, firm: string): Promise<ApiKeyDoc[]> {
  return apiKeys(db).find({ firm }).sort({ created_at: -1 }).limit(1000).toArray();
}

/** Revocation deletes the hash's key document first, so the key stops working on the very next request. */
export async function revokeApiKey(db: Db, id: string): Promise<void> {
  const doc = await apiKeys(db).findOne({ _id: id });
  if (doc === null) throw notFound('api_key');
  await changeCached(db, () => apiKeyHashes(db).deleteOne({ _id: doc.key_hash }));
  await apiKeys(db).deleteOne({ _id: id });
}
