import { CrmError } from '../../integrations/crm/clio.js';
import {
  ClioGrantRefusedError,
  requestClioToken,
  revokeClioToken,
} from '../../integrations/crm/clio-oauth.js';
import { urlPolicyOf } from '../../platform/config.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import type { FirmSettings } from '../firms/firm-settings.js';
import { deleteClioConnection, readClioConnection, type ClioConnectionDoc } from './clio-connection-store.js';

// A firm that stops using its Clio OAuth connection (settings.crm set to none, or to a pasted token:
// docs/clio.md#disconnecting) has its grant ended at Clio and its tokens deleted, under the
// connection's lock so that no refresh writes them back meanwhile. Clio not answering does not keep
// the firm connected: the tokens are deleted all the same (nobody holds them any more) and a warning
// is logged.

const usesOAuth = (crm: FirmSettings['crm']): boolean => crm.provider === 'clio' && 'oauth' in crm;

/** After a settings change: disconnects Clio when the firm's crm was OAuth and no longer is. */
export async function disconnectClioIfDropped(
  services: Services,
  firm: string,
  before: FirmSettings['crm'],
  after: FirmSettings['crm'],
): Promise<void> {
  if (usesOAuth(before) && !usesOAuth(after)) await disconnectClio(services, firm);
}

export async function disconnectClio(services: Services, firm: string): Promise<void> {
  const db = services.mongo.db;
  await withRecordLock(
    services.redis,
    redisKeys(services.config).clioTokenLock(firm),
    async () => {
      const conn = await readClioConnection(db, firm);
      if (conn === null) return;
      try {
        await revokeGrant(services, conn);
      } catch (err) {
        services.log.warn(
          { err: (err as Error).message, firm },
          'Clio did not confirm the revocation of the grant; its tokens are deleted all the same',
        );
      }
      await deleteClioConnection(db, firm);
    },
    // The token source's lock, held as it holds it: renewed while Clio is slow (up to three
    // requests of 20 s each), so no worker takes it meanwhile and refreshes with the same token.
    { ttlMs: services.config.oauthTokenLockMs, renew: true, waitMs: 60_000 },
  );
}

async function revokeGrant(services: Services, conn: ClioConnectionDoc): Promise<void> {
  const policy = urlPolicyOf(services.config);
  if (conn.expires_at.getTime() > Date.now()) {
    try {
      await revokeClioToken(conn.base_url, conn.access_token, policy);
      return;
    } catch (err) {
      if (!(err instanceof CrmError) || err.status !== 401) throw err;
    }
  }
  // An expired access token deauthorizes nothing: the refresh token gets one that does.
  const { clioClientId, clioClientSecret } = services.config;
  if (clioClientId === undefined || clioClientSecret === undefined) {
    throw new Error('the access token has expired and CLIO_CLIENT_ID/CLIO_CLIENT_SECRET are unset');
  }
  let access: string;
  try {
    const tokens = await requestClioToken(
      conn.base_url,
      { grant_type: 'refresh_token', refresh_token: conn.refresh_token },
      { clientId: clioClientId, clientSecret: clioClientSecret },
      policy,
    );
    access = tokens.access_token;
  } catch (err) {
    // The grant is gone at Clio already (revoked by the firm, or expired): nothing to revoke.
    if (err instanceof ClioGrantRefusedError && err.error === 'invalid_grant') return;
    throw err;
  }
  await revokeClioToken(conn.base_url, access, policy);
}
