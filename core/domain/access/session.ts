import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import type { Principal } from './principal.js';
import { FIRM_SLUG_PATTERN } from '../firms/firm-slug.js';

const ALG = 'HS256';
const slugRe = new RegExp(FIRM_SLUG_PATTERN);

/** Verifies a dashboard session JWT; null when it is invalid, expired or lacks a claim. */
export async function verifySessionToken(token: string, secret: string): Promise<Principal | null> {
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: [ALG],
      requiredClaims: ['exp', 'sub', 'firm'],
    });
    const { firm, sub } = payload;
    if (typeof firm !== 'string' || typeof sub !== 'string') return null;
    if (firm === '*') return { kind: 'platform', via: 'session', subject: sub };
    if (!slugRe.test(firm)) return null;
    return { kind: 'firm', firm, via: 'session', subject: sub };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}

/** Issues a session token, as the dashboard's login does (also used by the widget page and tests). */
export async function signSessionToken(
  claims: { firm: string; sub: string; [k: string]: unknown },
  secret: string,
  ttlSeconds: number,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: ALG })
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(new TextEncoder().encode(secret));
}
