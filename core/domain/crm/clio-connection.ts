import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { CrmError, type ClioTokenSource } from '../../integrations/crm/clio.js';
import {
  ClioGrantRefusedError,
  clioAuthorizeUrl,
  clioRegionBase,
  requestClioToken,
  type ClioClientCredentials,
  type ClioRegion,
} from '../../integrations/crm/clio-oauth.js';
import { urlPolicyOf } from '../../platform/config.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { AppError, invalidRequest } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { getFirm, setFirmCrm } from '../firms/firms.js';
import { clearClioClientAlert, raiseClioClientAlert } from './clio-client-alert.js';
import { readClioConnection, saveClioConnection, type ClioConnectionDoc } from './clio-connection-store.js';

// A firm's Clio connected with OAuth (docs/clio.md#connected-with-oauth). The connect link sends the
// firm's browser to Clio with a `state` claimed for the firm (an insert whose _id is the state; valid 10
// minutes; the callback deletes it, so it works once). The callback exchanges the code and keeps the
// tokens in clio_connections (`_id` = the firm), never in the firm's settings, which only say
// {provider, oauth: {region, status, connected_at}}. A token is refreshed shortly before it
// expires and once after a 401, under a per-firm Redis lock: whoever takes the lock reads the
// connection again, so the workers that waited use the token refreshed by the first. A refused
// refresh (invalid_grant: the firm's grant) marks the firm reconnect_required, fails the effect
// for good, and mails the firm's notification_emails once per refresh token. Any other refusal
// (invalid_client: the service's own client credentials, RFC 6749 §5.2) is not the firm's: the
// operator is alerted (clio-client-alert.ts), the firm stays connected and the effect is retried.

const STATE_TTL_MS = 10 * 60_000;
/** Refresh a token this long before Clio says it expires. */
export const CLIO_REFRESH_MARGIN_MS = 5 * 60_000;

interface ClioOAuthStateDoc {
  _id: string;
  firm: string;
  region: ClioRegion;
  base_url: string;
  expires_at: Date;
  created_at: Date;
}

const states = (db: Db) => collection<ClioOAuthStateDoc>(db, COLLECTIONS.clioOAuthStates);

/**
 * Deletes the connect states whose 10 minutes have passed unused (a consent page closed, a
 * connect link never followed): the callback deletes a used one, nothing else ever would
 * (no TTL index on FerretDB; the maintenance queue runs this hourly).
 */
export async function pruneExpiredClioStates(db: Db, now = new Date()): Promise<number> {
  return (await states(db).deleteMany({ expires_at: { $lt: now } })).deletedCount;
}

function credentialsOf(services: Services): ClioClientCredentials {
  const { clioClientId, clioClientSecret } = services.config;
  if (clioClientId === undefined || clioClientSecret === undefined) {
    throw new AppError(
      409,
      'clio_oauth_not_configured',
      'Connecting Clio needs the service to be configured with CLIO_CLIENT_ID and CLIO_CLIENT_SECRET.',
    );
  }
  return { clientId: clioClientId, clientSecret: clioClientSecret };
}

export const clioRedirectUri = (services: Services): string =>
  `${services.config.publicBaseUrl.replace(/\/+$/, '')}/api/integrations/clio/callback`;

/** Claims a state for the firm and returns Clio's authorize URL carrying it. */
export async function startClioConnect(
  services: Services,
  firm: string,
  region: ClioRegion,
): Promise<string> {
  const { clientId } = credentialsOf(services);
  const base = clioRegionBase(services.config.clioBaseUrl, region);
  const state = randomBytes(24).toString('base64url');
  const now = new Date();
  await claim(states(services.mongo.db), {
    _id: state,
    firm,
    region,
    base_url: base,
    expires_at: new Date(now.getTime() + STATE_TTL_MS),
    created_at: now,
  });
  return clioAuthorizeUrl(base, clientId, clioRedirectUri(services), state);
}

const badState = () =>
  invalidRequest(
    'This Clio connect link is unknown, expired or already used; start again from the connect link.',
    [{ path: '/state', message: 'is unknown, expired or already used' }],
  );

/** The callback: uses the state once, exchanges the code, keeps the tokens. Returns the firm. */
export async function finishClioConnect(services: Services, code: string, state: string): Promise<string> {
  const credentials = credentialsOf(services);
  const db = services.mongo.db;
  const pending = await states(db).findOne({ _id: state });
  if (pending === null) throw badState();
  // The delete is the use: of two callbacks with one state, one deletes it.
  const used = await states(db).deleteOne({ _id: state });
  if (used.deletedCount !== 1 || pending.expires_at.getTime() <= Date.now()) throw badState();
  let tokens;
  try {
    tokens = await requestClioToken(
      pending.base_url,
      { grant_type: 'authorization_code', code, redirect_uri: clioRedirectUri(services) },
      credentials,
      urlPolicyOf(services.config),
    );
  } catch (err) {
    if (err instanceof ClioGrantRefusedError && err.error !== 'invalid_grant') {
      await raiseClioClientAlert(services, {
        error: err.error,
        description: err.description,
        firm: pending.firm,
      });
      throw new AppError(
        502,
        'clio_unavailable',
        `Clio refused the service's own client credentials (${err.error}); the operator has been alerted. Try again later from the connect link.`,
      );
    }
    if (err instanceof ClioGrantRefusedError) {
      throw invalidRequest(
        `Clio did not accept the authorization code (${err.error}); start again from the connect link.`,
        [{ path: '/code', message: `refused by Clio: ${err.error}` }],
      );
    }
    throw new AppError(
      502,
      'clio_unavailable',
      `Clio's token endpoint did not answer: ${(err as Error).message}`,
    );
  }
  if (tokens.refresh_token === null) {
    throw new AppError(
      502,
      'clio_unavailable',
      'Clio answered the authorization code without a refresh token.',
    );
  }
  await clearClioClientAlert(db);
  const now = new Date();
  const doc: ClioConnectionDoc = {
    _id: pending.firm,
    region: pending.region,
    base_url: pending.base_url,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    expires_at: new Date(now.getTime() + tokens.expires_in * 1000),
    status: 'connected',
    connected_at: now,
    updated_at: now,
  };
  await withRecordLock(services.redis, redisKeys(services.config).clioTokenLock(pending.firm), () =>
    saveClioConnection(db, doc),
  );
  await setFirmCrm(db, pending.firm, {
    provider: 'clio',
    oauth: { region: pending.region, status: 'connected', connected_at: now.toISOString() },
  });
  return pending.firm;
}

const reconnectRequired = (firm: string) =>
  new CrmError(
    `reconnect_required: Clio refused to refresh the firm ${firm}'s token; connect Clio again (GET /api/integrations/clio/connect).`,
    true,
    false,
  );

/** The connection's API base URL, or a final CrmError when the firm has none. */
export async function clioConnectionBase(services: Services, firm: string): Promise<string> {
  const conn = await readClioConnection(services.mongo.db, firm);
  if (conn === null)
    throw new CrmError(`The firm ${firm} has no Clio connection; connect Clio again.`, true, false);
  return conn.base_url;
}

/** The token source of a firm's OAuth connection, for ClioClient. */
export function clioTokenSource(services: Services, firm: string): ClioTokenSource {
  const db = services.mongo.db;
  const read = async () => {
    const conn = await readClioConnection(db, firm);
    if (conn === null)
      throw new CrmError(`The firm ${firm} has no Clio connection; connect Clio again.`, true, false);
    if (conn.status === 'reconnect_required') throw reconnectRequired(firm);
    return conn;
  };
  const due = (conn: ClioConnectionDoc) => conn.expires_at.getTime() - Date.now() <= CLIO_REFRESH_MARGIN_MS;
  /** Under the lock: the connection read again; refreshed only if still needed. */
  const refresh = (needed: (conn: ClioConnectionDoc) => boolean) =>
    withRecordLock(
      services.redis,
      redisKeys(services.config).clioTokenLock(firm),
      async () => {
        const conn = await read();
        if (!needed(conn)) return conn.access_token;
        return refreshNow(services, conn);
      },
      { waitMs: 60_000 },
    );
  return {
    async current() {
      const conn = await read();
      return due(conn) ? refresh(due) : conn.access_token;
    },
    renew: (stale) => refresh((conn) => conn.access_token === stale || due(conn)),
  };
}

async function refreshNow(services: Services, conn: ClioConnectionDoc): Promise<string> {
  const db = services.mongo.db;
  let tokens;
  try {
    tokens = await requestClioToken(
      conn.base_url,
      { grant_type: 'refresh_token', refresh_token: conn.refresh_token },
      credentialsOf(services),
      urlPolicyOf(services.config),
    );
  } catch (err) {
    if (err instanceof AppError) throw new CrmError(err.message, true, false);
    if (!(err instanceof ClioGrantRefusedError)) throw err;
    if (err.error !== 'invalid_grant') {
      // The service's own credentials, not the firm's grant: nothing the firm can do.
      await raiseClioClientAlert(services, {
        error: err.error,
        description: err.description,
        firm: conn._id,
      });
      throw new CrmError(
        `Clio refused the service's own client credentials (${err.error}); the operator has been alerted, the firm stays connected.`,
        false,
        false,
      );
    }
    await saveClioConnection(db, { ...conn, status: 'reconnect_required', updated_at: new Date() });
    await setFirmCrm(db, conn._id, {
      provider: 'clio',
      oauth: {
        region: conn.region,
        status: 'reconnect_required',
        connected_at: conn.connected_at.toISOString(),
      },
    });
    await mailReconnect(services, conn);
    throw reconnectRequired(conn._id);
  }
  await clearClioClientAlert(db);
  const now = new Date();
  await saveClioConnection(db, {
    ...conn,
    access_token: tokens.access_token,
    // The new refresh token replaces the old (Clio may rotate it); without one, the old stays.
    refresh_token: tokens.refresh_token ?? conn.refresh_token,
    expires_at: new Date(now.getTime() + tokens.expires_in * 1000),
    updated_at: now,
  });
  return tokens.access_token;
}

/** Tells the firm once per refused refresh token (a claim on firm + the token's hash). */
async function mailReconnect(services: Services, conn: ClioConnectionDoc): Promise<void> {
  const firm = await getFirm(services.mongo.db, conn._id);
  const to = firm?.settings?.notification_emails ?? [];
  if (services.mailer === null || to.length === 0) return;
  const tokenId = createHash('sha256').update(conn.refresh_token).digest('hex').slice(0, 32);
  const id = `${conn._id}|${tokenId}`;
  const notices = collection<{ _id: string; firm: string; created_at: Date }>(
    services.mongo.db,
    COLLECTIONS.clioReconnectNotices,
  );
  if (!(await claim(notices, { _id: id, firm: conn._id, created_at: new Date() }))) return;
  const connect = `${services.config.publicBaseUrl.replace(/\/+$/, '')}/api/integrations/clio/connect?firmSlug=${encodeURIComponent(conn._id)}&region=${conn.region}`;
  try {
    await services.mailer.send({
      to,
      subject: 'Clio needs to be connected again',
      text:
        `Clio refused to renew the access of ${firm?.name ?? conn._id} to your Clio account, so new intakes ` +
        `are no longer added to Clio.\n\nConnect Clio again: ${connect}\n`,
      messageId: `<clio-reconnect.${tokenId}.${conn._id}@intake.invalid>`,
    });
  } catch (err) {
    // Not sent: give the claim back so the next refused attempt tries again.
    await notices.deleteOne({ _id: id });
    services.log.warn({ err, firm: conn._id }, 'the Clio reconnect mail was not sent');
  }
}
