import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { CrmError } from '../../integrations/crm/clio.js';
import {
  RingCentralClient,
  RingCentralGrantRefusedError,
  requestRingCentralToken,
  ringCentralAuthorizeUrl,
  type RingCentralCredentials,
  type RingCentralTokenSource,
} from '../../integrations/phone/ringcentral.js';
import { urlPolicyOf } from '../../platform/config.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { AppError, forbidden, invalidRequest } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import type { Sealed } from '../../platform/secrets/envelope.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';
import type { Services } from '../../wiring/services.js';
import { getFirm } from '../firms/firms.js';
import { CONNECT_FLOW_SECONDS, browserBinding } from '../crm/connect-cookie.js';
import { lockedTokenSource } from '../oauth/token-source.js';
import { useConnectState } from '../oauth/connect-state.js';
import { replaceById } from '../../platform/db/upsert.js';

// A firm's RingCentral connected with OAuth (docs/ringcentral.md#connection): the authorization
// code flow with PKCE (S256), the state claimed for the firm and bound to the browser that started
// the flow (the same connect cookie as Clio's, connect-cookie.ts; an insert whose _id is the
// state, 10 minutes, deleted by the callback so it works once; it keeps the PKCE verifier). The
// callback, in that browser only, exchanges the code with the verifier and keeps the tokens in
// ringcentral_connections (`_id` = the firm), sealed with the firm's data key. Tokens are refreshed
// shortly before they expire (RingCentral's access tokens last an hour; an unused refresh token
// expires in a week) and once after a 401, under a per-firm Redis lock, as Clio's are. A refused
// refresh (invalid_grant) marks the connection reconnect_required; any other refusal
// (invalid_client: the service's own credentials) alerts the operator and leaves the firm
// connected.

const STATE_TTL_MS = CONNECT_FLOW_SECONDS * 1000;
/** Refresh an access token this long before RingCentral says it expires. */
export const RC_REFRESH_MARGIN_MS = 5 * 60_000;

interface RcStateDoc {
  _id: string;
  firm: string;
  browser: string;
  /** The PKCE code verifier (RFC 7636): only its S256 challenge went to the browser. */
  verifier: string;
  expires_at: Date;
  created_at: Date;
}

export interface RcSubscriptionState {
  id: string;
  expires_at: Date;
  /** How long RingCentral granted it for at its last create or renew. */
  lifetime_ms?: number;
}

export interface RingCentralConnectionDoc {
  _id: string;
  base_url: string;
  access_token: string;
  refresh_token: string;
  expires_at: Date;
  refresh_expires_at: Date | null;
  status: 'connected' | 'reconnect_required';
  /** The secret RingCentral sends back as Verification-Token on every delivery. */
  verification_token: string;
  subscription: RcSubscriptionState | null;
  connected_at: Date;
  updated_at: Date;
}

type Stored = Omit<RingCentralConnectionDoc, 'access_token' | 'refresh_token' | 'verification_token'> & {
  access_token: Sealed | string;
  refresh_token: Sealed | string;
  verification_token: Sealed | string;
};
type SealedName = 'access_token' | 'refresh_token' | 'verification_token';
const SEALED: SealedName[] = ['access_token', 'refresh_token', 'verification_token'];
const field = (name: SealedName) => sealedFieldName(COLLECTIONS.ringcentralConnections, name);

const states = (db: Db) => collection<RcStateDoc>(db, COLLECTIONS.ringcentralOAuthStates);
const connections = (db: Db) => collection<Stored>(db, COLLECTIONS.ringcentralConnections);

export async function readRingCentralConnection(
  db: Db,
  firm: string,
): Promise<RingCentralConnectionDoc | null> {
  const stored = await connections(db).findOne({ _id: firm });
  if (stored === null) return null;
  const box = secretBox(db, firm);
  const opened = { ...stored } as unknown as RingCentralConnectionDoc;
  for (const name of SEALED) opened[name] = await box.open(field(name), stored[name]);
  return opened;
}

/** Writes the connection (replacing the firm's), its secrets sealed. Callers hold the firm's token lock. */
export async function saveRingCentralConnection(db: Db, conn: RingCentralConnectionDoc): Promise<void> {
  const box = secretBox(db, conn._id);
  const stored = { ...conn } as unknown as Stored;
  for (const name of SEALED) stored[name] = await box.seal(field(name), conn[name]);
  await replaceById(connections(db), conn._id, stored);
}

/** Changes a connection under the firm's token lock, read again inside it. */
export async function updateRingCentralConnection(
  services: Services,
  firm: string,
  change: (conn: RingCentralConnectionDoc) => RingCentralConnectionDoc | null,
): Promise<RingCentralConnectionDoc | null> {
  return withRecordLock(
    services.redis,
    redisKeys(services.config).ringcentralTokenLock(firm),
    async () => {
      const conn = await readRingCentralConnection(services.mongo.db, firm);
      if (conn === null) return null;
      const next = change(conn);
      if (next === null) return conn;
      await saveRingCentralConnection(services.mongo.db, { ...next, updated_at: new Date() });
      return next;
    },
    { waitMs: 60_000 },
  );
}

/** Deletes connect states whose 10 minutes passed unused (the hourly maintenance job). */
export async function pruneExpiredRingCentralStates(db: Db, now = new Date()): Promise<number> {
  return (await states(db).deleteMany({ expires_at: { $lt: now } })).deletedCount;
}

export function ringCentralCredentials(services: Services): RingCentralCredentials {
  const { ringcentralClientId, ringcentralClientSecret } = services.config;
  if (ringcentralClientId === undefined || ringcentralClientSecret === undefined) {
    throw new AppError(
      409,
      'ringcentral_oauth_not_configured',
      'Connecting RingCentral needs the service to be configured with RINGCENTRAL_CLIENT_ID and RINGCENTRAL_CLIENT_SECRET.',
    );
  }
  return { clientId: ringcentralClientId, clientSecret: ringcentralClientSecret };
}

const publicBase = (services: Services) => services.config.publicBaseUrl.replace(/\/+$/, '');
export const ringCentralRedirectUri = (services: Services): string =>
  `${publicBase(services)}/api/integrations/ringcentral/callback`;
export const phoneWebhookUrl = (services: Services, firm: string): string =>
  `${publicBase(services)}/api/v2/${encodeURIComponent(firm)}/phone-webhook`;

/** Claims a state for the firm, bound to the browser's key; RingCentral's authorize URL carrying it. */
export async function startRingCentralConnect(
  services: Services,
  firm: string,
  browserKey: string,
): Promise<string> {
  const { clientId } = ringCentralCredentials(services);
  const state = randomBytes(24).toString('base64url');
  const verifier = randomBytes(48).toString('base64url');
  const now = new Date();
  await claim(states(services.mongo.db), {
    _id: state,
    firm,
    browser: browserBinding(browserKey),
    verifier,
    expires_at: new Date(now.getTime() + STATE_TTL_MS),
    created_at: now,
  });
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return ringCentralAuthorizeUrl(
    services.config.ringcentralServer,
    clientId,
    ringCentralRedirectUri(services),
    state,
    challenge,
  );
}

const badState = () =>
  invalidRequest(
    'This RingCentral connect link is unknown, expired or already used; start again from the connect link.',
    [{ path: '/state', message: 'is unknown, expired or already used' }],
  );

/** RingCentral refused the service's own credentials: logged for the operator; no firm can fix it. */
export async function raiseRingCentralClientAlert(
  services: Services,
  refusal: { error: string; description: string | null; firm: string },
): Promise<void> {
  services.log.error(
    {
      firm: refusal.firm,
      ringcentral_error: refusal.error,
      ringcentral_error_description: refusal.description,
    },
    `RingCentral refused the service's own OAuth client credentials (${refusal.error}): check RINGCENTRAL_CLIENT_ID and RINGCENTRAL_CLIENT_SECRET; firms stay connected`,
  );
  const now = new Date();
  const alerts = collection<{
    _id: string;
    error: string;
    description: string | null;
    since: Date;
    last_at: Date;
  }>(services.mongo.db, COLLECTIONS.clioClientAlerts);
  const held = await alerts.findOne({ _id: 'ringcentral_client' });
  await replaceById(alerts, 'ringcentral_client', {
    error: refusal.error,
    description: refusal.description,
    since: held?.since ?? now,
    last_at: now,
  });
}

/** RingCentral's refusal of the service's own credentials, while no grant has succeeded since; null otherwise. */
export async function ringCentralClientAlert(db: Db): Promise<{ error: string; since: Date } | null> {
  return collection<{ _id: string; error: string; since: Date }>(db, COLLECTIONS.clioClientAlerts).findOne({
    _id: 'ringcentral_client',
  });
}

async function clearRingCentralClientAlert(db: Db): Promise<void> {
  await collection<{ _id: string }>(db, COLLECTIONS.clioClientAlerts).deleteOne({
    _id: 'ringcentral_client',
  });
}

/**
 * The callback: uses the state once; in the browser that started the flow only (else 403, the
 * code never exchanged), exchanges the code with the PKCE verifier and keeps the connection.
 * Returns the firm.
 */
export async function receiveRingCentralCallback(
  services: Services,
  code: string,
  state: string,
  browserKey: string | undefined,
): Promise<string> {
  const credentials = ringCentralCredentials(services);
  const db = services.mongo.db;
  const pending = await useConnectState(states(db), state, browserKey, {
    unknown: badState,
    otherBrowser: () =>
      forbidden(
        'This RingCentral connection was not started in this browser: the connect link was passed on. Nothing was connected; open the connect link yourself, in this browser.',
        [{ path: '/state', message: 'was issued to another browser' }],
      ),
    onOtherBrowser: (p) =>
      services.log.warn(
        { firm: p.firm },
        'a RingCentral callback came from a browser that did not start the flow',
      ),
  });
  const base = services.config.ringcentralServer;
  let tokens;
  try {
    tokens = await requestRingCentralToken(
      base,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: ringCentralRedirectUri(services),
        code_verifier: pending.verifier,
      },
      credentials,
      urlPolicyOf(services.config),
    );
  } catch (err) {
    if (err instanceof RingCentralGrantRefusedError && err.error !== 'invalid_grant') {
      await raiseRingCentralClientAlert(services, {
        error: err.error,
        description: err.description,
        firm: pending.firm,
      });
      throw new AppError(
        502,
        'ringcentral_unavailable',
        `RingCentral refused the service's own client credentials (${err.error}); the operator has been alerted. Try again later.`,
      );
    }
    if (err instanceof RingCentralGrantRefusedError) {
      throw invalidRequest(
        `RingCentral did not accept the authorization code (${err.error}); start again from the connect link.`,
        [{ path: '/code', message: `refused by RingCentral: ${err.error}` }],
      );
    }
    throw new AppError(
      502,
      'ringcentral_unavailable',
      `RingCentral's token endpoint did not answer: ${(err as Error).message}`,
    );
  }
  await clearRingCentralClientAlert(db);
  const now = new Date();
  const previous = await readRingCentralConnection(db, pending.firm);
  const conn: RingCentralConnectionDoc = {
    _id: pending.firm,
    base_url: base,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token,
    expires_at: new Date(now.getTime() + tokens.expires_in * 1000),
    refresh_expires_at:
      tokens.refresh_token_expires_in === null
        ? null
        : new Date(now.getTime() + tokens.refresh_token_expires_in * 1000),
    status: 'connected',
    verification_token: previous?.verification_token ?? randomBytes(24).toString('base64url'),
    subscription: previous?.subscription ?? null,
    connected_at: now,
    updated_at: now,
  };
  await withRecordLock(services.redis, redisKeys(services.config).ringcentralTokenLock(pending.firm), () =>
    saveRingCentralConnection(db, conn),
  );
  return pending.firm;
}

const reconnectRequired = (firm: string) =>
  new CrmError(
    `reconnect_required: RingCentral refused to refresh the firm ${firm}'s token; connect RingCentral again (POST /api/integrations/ringcentral/connect).`,
    true,
    false,
  );

/** The token source of a firm's connection (refreshed as Clio's are: core/domain/oauth/token-source.ts). */
export function ringCentralTokenSource(services: Services, firm: string): RingCentralTokenSource {
  const db = services.mongo.db;
  return lockedTokenSource({
    redis: services.redis,
    lockKey: redisKeys(services.config).ringcentralTokenLock(firm),
    lockTtlMs: services.config.oauthTokenLockMs,
    marginMs: RC_REFRESH_MARGIN_MS,
    read: async () => {
      const conn = await readRingCentralConnection(db, firm);
      if (conn === null) throw new CrmError(`The firm ${firm} has no RingCentral connection.`, true, false);
      if (conn.status === 'reconnect_required') throw reconnectRequired(firm);
      return conn;
    },
    refresh: (conn) => refreshNow(services, conn),
  });
}

async function refreshNow(services: Services, conn: RingCentralConnectionDoc): Promise<string> {
  const db = services.mongo.db;
  let tokens;
  try {
    tokens = await requestRingCentralToken(
      conn.base_url,
      { grant_type: 'refresh_token', refresh_token: conn.refresh_token },
      ringCentralCredentials(services),
      urlPolicyOf(services.config),
    );
  } catch (err) {
    if (err instanceof AppError) throw new CrmError(err.message, true, false);
    if (!(err instanceof RingCentralGrantRefusedError)) throw err;
    if (err.error !== 'invalid_grant') {
      await raiseRingCentralClientAlert(services, {
        error: err.error,
        description: err.description,
        firm: conn._id,
      });
      throw new CrmError(
        `RingCentral refused the service's own client credentials (${err.error}); the operator has been alerted, the firm stays connected.`,
        false,
        false,
      );
    }
    await saveRingCentralConnection(db, { ...conn, status: 'reconnect_required', updated_at: new Date() });
    const firm = await getFirm(db, conn._id);
    services.log.warn(
      { firm: conn._id, name: firm?.name },
      'RingCentral refused a refresh: reconnect_required',
    );
    throw reconnectRequired(conn._id);
  }
  await clearRingCentralClientAlert(db);
  const now = new Date();
  await saveRingCentralConnection(db, {
    ...conn,
    access_token: tokens.access_token,
    // RingCentral rotates refresh tokens: the new one replaces the old.
    refresh_token: tokens.refresh_token,
    expires_at: new Date(now.getTime() + tokens.expires_in * 1000),
    refresh_expires_at:
      tokens.refresh_token_expires_in === null
        ? null
        : new Date(now.getTime() + tokens.refresh_token_expires_in * 1000),
    updated_at: now,
  });
  return tokens.access_token;
}

/** The firm's RingCentral client, or a final CrmError when it has no usable connection. */
export async function firmRingCentralClient(services: Services, firm: string): Promise<RingCentralClient> {
  const conn = await readRingCentralConnection(services.mongo.db, firm);
  if (conn === null) throw new CrmError(`The firm ${firm} has no RingCentral connection.`, true, false);
  if (conn.status === 'reconnect_required') throw reconnectRequired(firm);
  return new RingCentralClient({
    baseUrl: conn.base_url,
    tokens: ringCentralTokenSource(services, firm),
    policy: urlPolicyOf(services.config),
  });
}

/** What GET /api/integrations/ringcentral/status shows: never a token. */
export interface RingCentralStatus {
  connected: boolean;
  status: 'connected' | 'reconnect_required' | 'not_connected';
  connected_at: string | null;
  subscription_expires_at: string | null;
}

export async function ringCentralStatus(db: Db, firm: string): Promise<RingCentralStatus> {
  const conn = await connections(db).findOne({ _id: firm });
  if (conn === null)
    return { connected: false, status: 'not_connected', connected_at: null, subscription_expires_at: null };
  return {
    connected: conn.status === 'connected',
    status: conn.status,
    connected_at: conn.connected_at.toISOString(),
    subscription_expires_at: conn.subscription?.expires_at.toISOString() ?? null,
  };
}
