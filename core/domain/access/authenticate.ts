import type { Db } from 'mongodb';
import type { Config } from '../../platform/config.js';
import { AppError, forbidden, unauthorized } from '../../platform/errors.js';
import { secretDigest, sha256 } from '../../platform/crypto.js';
import type { ApiPrincipal, Principal } from './principal.js';
import { verifySessionToken } from './session.js';
import { PLATFORM_SESSIONS, isSessionRevoked } from './session-revocations.js';
import { API_KEY_PREFIX, findApiKeyByHash } from './api-keys.js';
import { WIDGET_TOKEN_PREFIX, verifyWidgetToken } from './widget-token.js';
import { findWidgetKey } from '../widget/widget-keys.js';

/** The platform key's digest, once per configured key (a config is made once per process). */
const platformKeys = new WeakMap<Config, { key: string; digest: ReturnType<typeof secretDigest> }>();
function platformKey(config: Config): ReturnType<typeof secretDigest> {
  let known = platformKeys.get(config);
  if (known === undefined || known.key !== config.adminApiKey) {
    known = { key: config.adminApiKey, digest: secretDigest(config.adminApiKey) };
    platformKeys.set(config, known);
  }
  return known.digest;
}

/** Resolves a token to a principal, or null for any token that is not valid now. */
async function principalForToken(token: string, config: Config, db: Db): Promise<Principal | null> {
  if (token.length === 0 || token.length > 4096) return null;
  // One digest of the token: compared in constant time with the platform key's, and an API key's
  // lookup key (its SHA-256).
  const digest = sha256(token);
  if (platformKey(config).matches(digest)) {
    return { kind: 'platform', via: 'platform_key', subject: 'platform' };
  }
  if (token.startsWith(API_KEY_PREFIX)) {
    const key = await findApiKeyByHash(db, digest.toString('hex'));
    return key === null ? null : { kind: 'firm', firm: key.firm, via: 'api_key', subject: key.id };
  }
  if (token.startsWith(WIDGET_TOKEN_PREFIX)) return widgetPrincipal(token, config, db);
  if (token.split('.').length === 3) return sessionPrincipal(token, config, db);
  return null;
}

/**
 * A session token's principal; it pays one (cached) point read for its firm's revocation, a platform
 * session (firm "*") for the platform's.
 */
async function sessionPrincipal(token: string, config: Config, db: Db): Promise<Principal | null> {
  const session = await verifySessionToken(token, config.sessionSecret);
  if (session === null) return null;
  const { principal, issuedAt } = session;
  const firm = principal.kind === 'firm' ? principal.firm : PLATFORM_SESSIONS;
  if (await isSessionRevoked(db, firm, issuedAt)) return null;
  return principal;
}

/**
 * A widget token is a session of its firm: POST /api/auth/revoke-sessions ends it too. A widget
 * key's token also ends with its key: deleted, or no longer allowing the token's origin (one
 * cached point read).
 */
async function widgetPrincipal(token: string, config: Config, db: Db): Promise<Principal | null> {
  const widget = await verifyWidgetToken(token, config.sessionSecret);
  if (widget === null) return null;
  const { principal } = widget;
  if (await isSessionRevoked(db, principal.firm, widget.issuedAt)) return null;
  if (principal.binding !== undefined) {
    const key = await findWidgetKey(db, principal.binding.key);
    if (
      key === null ||
      key.firm !== principal.firm ||
      !key.allowed_origins.includes(principal.binding.origin)
    ) {
      return null;
    }
  }
  return principal;
}

/** The token of an `Authorization: Bearer <token>` header, or null when absent or malformed. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** The password of an HTTP basic Authorization header (any user name), or null. */
export function basicAuthPassword(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? null : decoded.slice(colon + 1);
}

interface AuthOptions {
  /**
   * Accept a widget token. Only the chat routes opt in (docs/authentication.md#widget-tokens); everywhere
   * else a valid widget token is refused with 403, so a route added later is closed to it unless it asks.
   */
  acceptWidget?: boolean;
  /** Also take the token as the password of HTTP basic auth (any user name), so a browser can open the page. */
  basic?: boolean;
}

const widgetRefused = (): AppError =>
  forbidden(
    'A widget token may only be used on the chat routes (create-chat, chat-completion, end-chat, get-chat).',
  );

/** 401 with a Bearer challenge, and a Basic one where a browser may sign in with the key as password. */
const missingCredentials = (basic: boolean, message?: string): AppError => {
  const error = unauthorized(message);
  if (!basic) return error;
  return new AppError(error.status, error.code, error.message, undefined, {
    'WWW-Authenticate': ['Bearer', 'Basic realm="Intake Service", charset="UTF-8"'],
  });
};

/**
 * The principal of an Authorization header: 401 for a missing, malformed or invalid token; 403 for
 * a valid widget token unless the caller accepts one (`acceptWidget`). The overloads say the same
 * to the compiler: without `acceptWidget: true` the principal is never a widget's.
 */
export async function authenticateBearer(
  header: string | undefined,
  config: Config,
  db: Db,
  options?: AuthOptions & { acceptWidget?: false },
): Promise<ApiPrincipal>;
export async function authenticateBearer(
  header: string | undefined,
  config: Config,
  db: Db,
  options: AuthOptions & { acceptWidget: true },
): Promise<Principal>;
export async function authenticateBearer(
  header: string | undefined,
  config: Config,
  db: Db,
  options: AuthOptions = {},
): Promise<Principal> {
  const basic = options.basic === true;
  const token = bearerToken(header) ?? (basic ? basicAuthPassword(header) : null);
  if (token === null) throw missingCredentials(basic);
  const principal = await principalForToken(token, config, db);
  if (principal === null) throw missingCredentials(basic, 'The bearer token is invalid, expired or revoked.');
  if (principal.kind === 'widget' && options.acceptWidget !== true) throw widgetRefused();
  return principal;
}
