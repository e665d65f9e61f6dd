import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { generateApiKey, sha256Hex } from '../../platform/crypto.js';

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

const apiKeys = (db: Db) => collection<ApiKeyDoc>(db, COLLECTIONS.apiKeys);

export async function findApiKeyByHash(db: Db, keyHash: string): Promise<ApiKeyDoc | null> {
  return apiKeys(db).findOne({ key_hash: keyHash });
}

export async function createApiKey(db: Db, firm: string, name: string) {
  const key = generateApiKey();
  const doc: ApiKeyDoc = {
    _id: newId('key', 12),
    firm,
    name,
    key_hash: sha256Hex(key),
    key_prefix: key.slice(0, 10),
    created_at: new Date(),
  };
  await apiKeys(db).insertOne(doc);
  return { ...apiKeyView(doc), key };
}

export async function listApiKeys(db: Db, firm: string) {
  const docs = await apiKeys(db).find({ firm }).sort({ created_at: -1 }).limit(1000).toArray();
  return docs.map(apiKeyView);
}

/** Revocation deletes the hash, so the key stops working on the very next request. */
export async function revokeApiKey(db: Db, id: string, firm?: string): Promise<void> {
  const filter = firm === undefined ? { _id: id } : { _id: id, firm };
  const result = await apiKeys(db).deleteOne(filter);
  if (result.deletedCount === 0) throw notFound('api_key');
}

function apiKeyView(doc: ApiKeyDoc) {
  return {
    id: doc._id,
    firmSlug: doc.firm,
    name: doc.name,
    key_prefix: doc.key_prefix,
    created_at: doc.created_at.toISOString(),
  };
}
