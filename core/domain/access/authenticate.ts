import type { Db } from 'mongodb';
import type { Config } from '../../platform/config.js';
import { unauthorized } from '../../platform/errors.js';
import { safeEqual, sha256Hex } from '../../platform/crypto.js';
import type { Principal } from './principal.js';
import { verifySessionToken } from './session.js';
import { isSessionRevoked } from './session-revocations.js';
import { API_KEY_PREFIX, findApiKeyByHash } from './api-keys.js';

/** Resolves a bearer token to a principal, or null for any token that is not valid now. */
async function principalForToken(token: string, config: Config, db: Db): Promise<Principal | null> {
  if (token.length === 0 || token.length > 4096) return null;
  if (safeEqual(token, config.adminApiKey)) {
    return { kind: 'platform', via: 'platform_key', subject: 'platform' };
  }
  if (token.startsWith(API_KEY_PREFIX)) {
    const key = await findApiKeyByHash(db, sha256Hex(token));
    return key === null ? null : { kind: 'firm', firm: key.firm, via: 'api_key', subject: key.id };
  }
  if (token.split('.').length === 3) return sessionPrincipal(token, config, db);
  return null;
}

/** A session token's principal; a firm session pays one point read for its firm's revocation. */
async function sessionPrincipal(token: string, config: Config, db: Db): Promise<Principal | null> {
  const session = await verifySessionToken(token, config.sessionSecret);
  if (session === null) return null;
  const { principal, issuedAt } = session;
  if (principal.kind === 'firm' && (await isSessionRevoked(db, principal.firm, issuedAt))) return null;
  return principal;
}

/** The token of an `Authorization: Bearer <token>` header, or null when absent or malformed. */
function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** The principal of an Authorization header; 401 for a missing, malformed or invalid token. */
export async function authenticateBearer(
  header: string | undefined,
  config: Config,
  db: Db,
): Promise<Principal> {
  const token = bearerToken(header);
  if (token === null) throw unauthorized();
  const principal = await principalForToken(token, config, db);
  if (principal === null) throw unauthorized('The bearer token is invalid, expired or revoked.');
  return principal;
}
