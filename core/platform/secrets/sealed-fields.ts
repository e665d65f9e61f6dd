import type { Db } from 'mongodb';
import { COLLECTIONS, collection, type CollectionName } from '../db/collections.js';
import { rewrapFirmKeys, secretBox } from './data-keys.js';

// Every stored field that holds a secret, sealed with its firm's data key
// (docs/operations.md#secrets-at-rest), and what `release` does about them, each step safe to run
// again: every data key wrapped with the current SECRETS_KEY (a rotation's second half), then any
// such field still holding plaintext (written before secrets were sealed) sealed. The firm settings'
// paths are the write-only values of the settings schema (test/unit/sealed-fields.test.ts holds
// this list to it).

type Doc = Record<string, unknown>;

interface SealedField {
  /** Where it is, as a dotted path in the document. */
  path: string;
  /** Which firm's data key seals it. */
  firm: (doc: Doc) => string;
}

const byId = (doc: Doc) => doc._id as string;

/** The name a sealed value is bound to (its additional data): the collection and the path. */
export const sealedFieldName = (coll: CollectionName, path: string): string => `${coll}.${path}`;

export const SEALED_FIELDS: Partial<Record<CollectionName, SealedField[]>> = {
  [COLLECTIONS.firms]: [
    { path: 'settings.crm.access_token', firm: byId },
    { path: 'settings.booking.api_key', firm: byId },
    { path: 'settings.voice_webhook_secret', firm: byId },
    { path: 'settings.booking_webhook_secret', firm: byId },
  ],
  [COLLECTIONS.ringcentralConnections]: [
    { path: 'access_token', firm: byId },
    { path: 'refresh_token', firm: byId },
    { path: 'verification_token', firm: byId },
  ],
  [COLLECTIONS.clioConnections]: [
    { path: 'access_token', firm: byId },
    { path: 'refresh_token', firm: byId },
  ],
  // A callback's tokens waiting (10 minutes) for the browser's confirmation.
  [COLLECTIONS.clioOAuthConfirmations]: [
    { path: 'access_token', firm: (doc) => doc.firm as string },
    { path: 'refresh_token', firm: (doc) => doc.firm as string },
  ],
  // A webhook endpoint's signing secret, and the previous one for 24 h after a rotation.
  [COLLECTIONS.webhookEndpoints]: [
    { path: 'secret', firm: (doc) => doc.firm as string },
    { path: 'previous_secret', firm: (doc) => doc.firm as string },
  ],
  [COLLECTIONS.simulatorCalls]: [
    { path: 'webhook.secret', firm: (doc) => (doc.metadata as { firm: string }).firm },
  ],
};

const valueAt = (doc: Doc, path: string): unknown =>
  path
    .split('.')
    .reduce<unknown>(
      (node, part) => (node === null || typeof node !== 'object' ? undefined : (node as Doc)[part]),
      doc,
    );

/** Seals every listed field still stored in plaintext; returns how many documents each collection had changed. */
async function sealPlaintext(db: Db): Promise<Record<string, number>> {
  const changed: Record<string, number> = {};
  for (const [name, fields] of Object.entries(SEALED_FIELDS) as Array<[CollectionName, SealedField[]]>) {
    changed[name] = 0;
    const coll = collection<Doc>(db, name);
    for await (const doc of coll.find({})) {
      const set: Record<string, unknown> = {};
      for (const field of fields) {
        const value = valueAt(doc, field.path);
        if (typeof value !== 'string') continue;
        set[field.path] = await secretBox(db, field.firm(doc)).seal(sealedFieldName(name, field.path), value);
      }
      if (Object.keys(set).length === 0) continue;
      // Only those fields: a document changed meanwhile keeps everything else.
      await coll.updateOne({ _id: doc._id }, { $set: set });
      changed[name] += 1;
    }
  }
  return changed;
}

export interface SecretsRelease {
  /** Data keys wrapped again with SECRETS_KEY (they were wrapped with a previous key). */
  rewrapped: number;
  /** Per collection, the documents whose plaintext secrets were sealed. */
  sealed: Record<string, number>;
}

export async function releaseSecrets(db: Db): Promise<SecretsRelease> {
  const { rewrapped } = await rewrapFirmKeys(db);
  return { rewrapped, sealed: await sealPlaintext(db) };
}
