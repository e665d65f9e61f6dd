import { createHash, randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { CrmError, type ClioTokenSource } from '../../integrations/crm/clio.js';
import {
  ClioGrantRefusedError,
  clioAuthorizeUrl,
  clioRegionBase,
  clioWhoAmI,
  requestClioToken,
  type ClioClientCredentials,
  type ClioRegion,
  type ClioTokenHolder,
} from '../../integrations/crm/clio-oauth.js';
import { urlPolicyOf } from '../../platform/config.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { AppError, forbidden, invalidRequest } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { getFirm, setFirmCrm } from '../firms/firms.js';
import { clearClioClientAlert, raiseClioClientAlert } from './clio-client-alert.js';
import { CONNECT_FLOW_SECONDS, browserBinding, sameBrowser } from './connect-cookie.js';
import { lockedTokenSource } from '../oauth/token-source.js';
import { useConnectState } from '../oauth/connect-state.js';
import {
  markReconnectNoticed,
  readClioConnection,
  saveClioConnection,
  type ClioConnectionDoc,
} from './clio-connection-store.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import type { Sealed } from '../../platform/secrets/envelope.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';

// A firm's Clio connected with OAuth (docs/clio.md#connected-with-oauth). The connect link sends the
// firm's browser to Clio with a `state` claimed for the firm and bound to that browser (the hash of
// its connect cookie, connect-cookie.ts; an insert whose _id is the state; valid 10 minutes; the
// callback deletes it, so it works once). The callback, in that browser only (any other is refused
// before the code is exchanged), exchanges the code and asks Clio whose it is (who_am_i); the
// tokens wait in clio_oauth_confirmations (10 minutes, bound to the same browser) until that
// browser confirms the firm and the Clio account shown to it. Confirmed, they are kept in
// clio_connections (`_id` = the firm), never in the firm's settings, which only say
// {provider, oauth: {region, status, connected_at}}. A token is refreshed shortly before it
// expires and once after a 401, under a per-firm Redis lock: whoever takes the lock reads the
// connection again, so the workers that waited use the token refreshed by the first. A refused
// refresh (invalid_grant: the firm's grant) marks the firm reconnect_required, fails the effect
// for good, and mails the firm's notification_emails once per refresh token. Any other refusal
// (invalid_client: the service's own client credentials, RFC 6749 §5.2) is not the firm's: the
// operator is alerted (clio-client-alert.ts), the firm stays connected and the effect is retried.

const STATE_TTL_MS = CONNECT_FLOW_SECONDS * 1000;
/** Refresh a token this long before Clio says it expires. */
export const CLIO_REFRESH_MARGIN_MS = 5 * 60_000;

interface ClioOAuthStateDoc {
  _id: string;
  firm: string;
  region: ClioRegion;
  base_url: string;
  /** The hash of the connect cookie of the browser that started the flow. */
  browser: string;
  expires_at: Date;
  created_at: Date;
}

/**
 * A callback's tokens waiting for the confirmation of the browser that started the flow, sealed
 * with the firm's data key as a connection's are (clio-connection-store.ts).
 */
interface ClioConfirmationDoc {
  _id: string;
  firm: string;
  region: ClioRegion;
  base_url: string;
  browser: string;
  holder: ClioTokenHolder;
  access_token: Sealed;
  refresh_token: Sealed;
  token_expires_at: Date;
  expires_at: Date;
  created_at: Date;
}

const confirmationField = (token: 'access_token' | 'refresh_token') =>
  sealedFieldName(COLLECTIONS.clioOAuthConfirmations, token);

const states = (db: Db) => collection<ClioOAuthStateDoc>(db, COLLECTIONS.clioOAuthStates);
const confirmations = (db: Db) => collection<ClioConfirmationDoc>(db, COLLECTIONS.clioOAuthConfirmations);

/**
 * Deletes the connect states and the confirmations whose 10 minutes have passed unused (a consent
 * page closed, a connect link never followed, a confirmation page left): the callback and the
 * confirmation delete a used one, nothing else ever would (no TTL index on FerretDB; the
 * maintenance queue runs this hourly).
 */
export async function pruneExpiredClioStates(db: Db, now = new Date()): Promise<number> {
  const unused = (await states(db).deleteMany({ expires_at: { $lt: now } })).deletedCount;
  return unused + (await confirmations(db).deleteMany({ expires_at: { $lt: now } })).deletedCount;
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

/** Claims a state for the firm, bound to the browser's key, and returns Clio's authorize URL carrying it. */
export async function startClioConnect(
  services: Services,
  firm: string,
  region: ClioRegion,
  browserKey: string,
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
    browser: browserBinding(browserKey),
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

const otherBrowser = () =>
  forbidden(
    'This Clio connection was not started in this browser: the connect link was opened somewhere ' +
      'else and passed on (or this browser has lost its cookies since). Nothing was connected, and the ' +
      'Clio account that was just approved has not been used. To connect your own firm, open its ' +
      'connect link yourself, signed in to this service, in this browser.',
    [{ path: '/state', message: 'was issued to another browser' }],
  );

/** A callback whose tokens wait for the confirmation: what to show, and the id to confirm with. */
export interface PendingClioConnection {
  id: string;
  firm: string;
  region: ClioRegion;
  holder: ClioTokenHolder;
}

/**
 * The callback: uses the state once; in the browser that started the flow only (else 403 and the
 * code is never exchanged), exchanges the code, asks Clio whose account it is, and keeps the tokens
 * for the confirmation (nothing is connected yet).
 */
export async function receiveClioCallback(
  services: Services,
  code: string,
  state: string,
  browserKey: string | undefined,
): Promise<PendingClioConnection> {
  const credentials = credentialsOf(services);
  const db = services.mongo.db;
  const pending = await useConnectState(states(db), state, browserKey, {
    unknown: badState,
    otherBrowser,
    onOtherBrowser: (p) =>
      services.log.warn({ firm: p.firm }, 'a Clio callback came from a browser that did not start the flow'),
  });
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
  let holder: ClioTokenHolder;
  try {
    holder = await clioWhoAmI(pending.base_url, tokens.access_token, urlPolicyOf(services.config));
  } catch (err) {
    throw new AppError(
      502,
      'clio_unavailable',
      `Clio did not say whose account was approved (${(err as Error).message}); start again from the connect link.`,
    );
  }
  const now = new Date();
  const id = randomBytes(32).toString('base64url');
  const box = secretBox(db, pending.firm);
  await confirmations(db).insertOne({
    _id: id,
    firm: pending.firm,
    region: pending.region,
    base_url: pending.base_url,
    browser: pending.browser,
    holder,
    access_token: await box.seal(confirmationField('access_token'), tokens.access_token),
    refresh_token: await box.seal(confirmationField('refresh_token'), tokens.refresh_token),
    token_expires_at: new Date(now.getTime() + tokens.expires_in * 1000),
    expires_at: new Date(now.getTime() + STATE_TTL_MS),
    created_at: now,
  });
  return { id, firm: pending.firm, region: pending.region, holder };
}

const badConfirmation = () =>
  invalidRequest(
    'This Clio confirmation is unknown, expired or already used; start again from the connect link.',
    [{ path: '/confirmation', message: 'is unknown, expired or already used' }],
  );

/**
 * The confirmation, in the browser that started the flow only (403 otherwise, and the
 * confirmation stays for that browser): used once; `connect` keeps the tokens as the firm's
 * connection, `cancel` drops them. Returns the firm and whether it is now connected.
 */
export async function confirmClioConnect(
  services: Services,
  id: string,
  browserKey: string | undefined,
  decision: 'connect' | 'cancel',
): Promise<{ firm: string; connected: boolean }> {
  const db = services.mongo.db;
  const pending = await confirmations(db).findOne({ _id: id });
  if (pending === null) throw badConfirmation();
  if (!sameBrowser(pending.browser, browserKey)) throw otherBrowser();
  const used = await confirmations(db).deleteOne({ _id: id });
  if (used.deletedCount !== 1 || pending.expires_at.getTime() <= Date.now()) throw badConfirmation();
  if (decision === 'cancel') return { firm: pending.firm, connected: false };
  const now = new Date();
  const box = secretBox(db, pending.firm);
  const doc: ClioConnectionDoc = {
    _id: pending.firm,
    region: pending.region,
    base_url: pending.base_url,
    access_token: await box.open(confirmationField('access_token'), pending.access_token),
    refresh_token: await box.open(confirmationField('refresh_token'), pending.refresh_token),
    expires_at: pending.token_expires_at,
    status: 'connected',
    connected_at: now,
    updated_at: now,
  };
  await withRecordLock(services.redis, redisKeys(services.config).clioTokenLock(pending.firm), () =>
    saveClioConnection(db, doc),
  );
  await setFirmCrm(services, pending.firm, {
    provider: 'clio',
    oauth: { region: pending.region, status: 'connected', connected_at: now.toISOString() },
  });
  return { firm: pending.firm, connected: true };
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
  return lockedTokenSource({
    redis: services.redis,
    lockKey: redisKeys(services.config).clioTokenLock(firm),
    lockTtlMs: services.config.oauthTokenLockMs,
    marginMs: CLIO_REFRESH_MARGIN_MS,
    read: async () => {
      const conn = await readClioConnection(db, firm);
      if (conn === null)
        throw new CrmError(`The firm ${firm} has no Clio connection; connect Clio again.`, true, false);
      if (conn.status === 'reconnect_required') {
        // What the refusal owed the firm and did not get done then (its settings, the mail).
        if (conn.reconnect_noticed === false) await noticeReconnect(services, conn);
        throw reconnectRequired(firm);
      }
      return conn;
    },
    refresh: (conn) => refreshNow(services, conn),
  });
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
    const refused: ClioConnectionDoc = {
      ...conn,
      status: 'reconnect_required',
      reconnect_noticed: false,
      updated_at: new Date(),
    };
    await saveClioConnection(db, refused);
    await noticeReconnect(services, refused);
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

/**
 * Tells the firm its grant was refused: its settings' crm.status (while they still name this OAuth
 * connection: a firm that chose another CRM meanwhile keeps its choice) and the mail, then marks
 * the connection told. A step that fails (the firm's lock busy, SMTP down) is logged and left for
 * the next read of the connection, which does it again (each step is idempotent; the mail a claim).
 */
async function noticeReconnect(services: Services, conn: ClioConnectionDoc): Promise<void> {
  try {
    const firm = await getFirm(services.mongo.db, conn._id);
    const crm = firm?.settings?.crm;
    if (crm?.provider === 'clio' && 'oauth' in crm && crm.oauth !== undefined) {
      await setFirmCrm(services, conn._id, {
        provider: 'clio',
        oauth: {
          region: conn.region,
          status: 'reconnect_required',
          connected_at: conn.connected_at.toISOString(),
        },
      });
    }
    if (
      !(await mailReconnect(
        services,
        conn,
        firm?.name ?? conn._id,
        firm?.settings?.notification_emails ?? [],
      ))
    )
      return;
    await markReconnectNoticed(services.mongo.db, conn._id, conn.refresh_token);
  } catch (err) {
    services.log.warn({ err, firm: conn._id }, 'the refused Clio grant was not yet told to the firm');
  }
}

/**
 * Tells the firm once per refused refresh token (a claim on firm + the token's hash); false when
 * the mail could not be sent (the claim given back, for the next attempt).
 */
async function mailReconnect(
  services: Services,
  conn: ClioConnectionDoc,
  firmName: string,
  to: string[],
): Promise<boolean> {
  if (services.mailer === null || to.length === 0) return true;
  const tokenId = createHash('sha256').update(conn.refresh_token).digest('hex').slice(0, 32);
  const id = `${conn._id}|${tokenId}`;
  const notices = collection<{ _id: string; firm: string; created_at: Date }>(
    services.mongo.db,
    COLLECTIONS.clioReconnectNotices,
  );
  if (!(await claim(notices, { _id: id, firm: conn._id, created_at: new Date() }))) return true;
  const connect = `${services.config.publicBaseUrl.replace(/\/+$/, '')}/api/integrations/clio/connect?firmSlug=${encodeURIComponent(conn._id)}&region=${conn.region}`;
  try {
    await services.mailer.send({
      to,
      subject: 'Clio needs to be connected again',
      text:
        `Clio refused to renew the access of ${firmName} to your Clio account, so new intakes ` +
        `are no longer added to Clio.\n\nConnect Clio again: ${connect}\n`,
      messageId: `<clio-reconnect.${tokenId}.${conn._id}@intake.invalid>`,
    });
  } catch (err) {
    // Not sent: give the claim back so the next attempt tries again.
    await notices.deleteOne({ _id: id });
    services.log.warn({ err, firm: conn._id }, 'the Clio reconnect mail was not sent');
    return false;
  }
  return true;
}
