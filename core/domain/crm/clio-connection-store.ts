import type { Db } from 'mongodb';
import type { ClioRegion } from '../../integrations/crm/clio-oauth.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import type { Sealed } from '../../platform/secrets/envelope.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';
import { replaceById } from '../../platform/db/upsert.js';

// Where a firm's Clio OAuth connection is kept (clio_connections, `_id` = the firm): its access
// and refresh tokens sealed with the firm's data key (docs/operations.md#secrets-at-rest), never in
// plaintext. Everything that reads or writes a connection goes through here and sees the tokens
// opened.

export interface ClioConnectionDoc {
  _id: string;
  region: ClioRegion;
  base_url: string;
  access_token: string;
  refresh_token: string;
  expires_at: Date;
  status: 'connected' | 'reconnect_required';
  /**
   * With `reconnect_required`: whether the firm was told (its settings' crm.status, the mail). false
   * until both are done, so the next read of the connection tries again; absent (connections
   * refused before 2026-12-02, or connected): nothing owed.
   */
  reconnect_noticed?: boolean;
  connected_at: Date;
  updated_at: Date;
}

/** Marks the firm told of its refused grant (one field; the tokens untouched). */
export async function markReconnectNoticed(db: Db, firm: string, refreshToken: string): Promise<void> {
  const current = await readClioConnection(db, firm);
  // A connection made again since (its grant another) owes nothing and is left as it is.
  if (current === null || current.status !== 'reconnect_required' || current.refresh_token !== refreshToken)
    return;
  await connections(db).updateOne({ _id: firm }, { $set: { reconnect_noticed: true } });
}

type StoredConnection = Omit<ClioConnectionDoc, 'access_token' | 'refresh_token'> & {
  access_token: Sealed | string;
  refresh_token: Sealed | string;
};

type Token = 'access_token' | 'refresh_token';
const field = (token: Token) => sealedFieldName(COLLECTIONS.clioConnections, token);
const connections = (db: Db) => collection<StoredConnection>(db, COLLECTIONS.clioConnections);

export async function readClioConnection(db: Db, firm: string): Promise<ClioConnectionDoc | null> {
  const stored = await connections(db).findOne({ _id: firm });
  if (stored === null) return null;
  const box = secretBox(db, firm);
  return {
    ...stored,
    access_token: await box.open(field('access_token'), stored.access_token),
    refresh_token: await box.open(field('refresh_token'), stored.refresh_token),
  };
}

async function sealed(db: Db, conn: ClioConnectionDoc): Promise<StoredConnection> {
  const box = secretBox(db, conn._id);
  return {
    ...conn,
    access_token: await box.seal(field('access_token'), conn.access_token),
    refresh_token: await box.seal(field('refresh_token'), conn.refresh_token),
  };
}

/** Writes the connection (replacing the firm's, or making it), its tokens sealed. */
export async function saveClioConnection(db: Db, conn: ClioConnectionDoc): Promise<void> {
  await replaceById(connections(db), conn._id, await sealed(db, conn));
}

export async function deleteClioConnection(db: Db, firm: string): Promise<void> {
  await connections(db).deleteOne({ _id: firm });
}
