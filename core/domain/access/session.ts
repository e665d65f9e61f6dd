import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import type { Principal } from './principal.js';
import { FIRM_SLUG_PATTERN } from '../firms/firm-slug.js';

const ALG = 'HS256';
const slugRe = new RegExp(FIRM_SLUG_PATTERN);

/** The longest a session token may live: `exp − iat` (or `exp − now` without `iat`). */
const MAX_SESSION_SECONDS = 24 * 60 * 60;
/** How far in the future an `iat` may be (clock skew) before the token is refused. */
const MAX_IAT_SKEW_SECONDS = 60;

/** A verified session token: who it acts for, and when it says it was issued (seconds), if it does. */
interface VerifiedSession {
  principal: Principal;
  issuedAt: number | undefined;
}

/**
 * Verifies a dashboard session JWT; null when it is invalid, expired, lacks a claim, lives
 * longer than 24 hours or claims to be issued in the future. (Revocation is checked by the caller.)
 */
export async function verifySessionToken(token: string, secret: string): Promise<VerifiedSession | null> {
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: [ALG],
      requiredClaims: ['exp', 'sub', 'firm'],
    });
    const { firm, sub, exp, iat } = payload;
    if (typeof firm !== 'string' || typeof sub !== 'string' || typeof exp !== 'number') return null;
    const now = Date.now() / 1000;
    if (iat !== undefined) {
      if (iat > now + MAX_IAT_SKEW_SECONDS) return null;
      if (exp - iat > MAX_SESSION_SECONDS) return null;
    } else if (exp - now > MAX_SESSION_SECONDS) {
      return null;
    }
    if (firm === '*') return { principal: { kind: 'platform', via: 'session', subject: sub }, issuedAt: iat };
    if (!slugRe.test(firm)) return null;
    return { principal: { kind: 'firm', firm, via: 'session', subject: sub }, issuedAt: iat };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}

/**
 * Issues a session token, as the dashboard's login does (also used by tests): `iat` now,
 * `exp` `ttlSeconds` later (at most 24 hours, or the token is refused).
 */
export async function signSessionToken(
  claims: { firm: string; sub: string; [k: string]: unknown },
  secret: string,
  ttlSeconds: number,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: ALG })
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(new TextEncoder().encode(secret));
}
