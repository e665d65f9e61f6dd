import { createHmac } from 'node:crypto';
import { jwtVerify, SignJWT, errors as joseErrors } from 'jose';
import { newId } from '../../platform/ids.js';
import type { WidgetPrincipal } from './principal.js';
import { FIRM_SLUG_PATTERN } from '../firms/firm-slug.js';

// Widget tokens (docs/authentication.md#widget-tokens): minted by GET /api/test-widget for the chat
// widget on that page, and by POST /api/widget/session for a publishable widget key, `iwt_` + an
// HS256 JWT {typ: "widget", firm, sub, iat, exp}; a key's token also names the key, the page's
// origin and the agent (`wk`, `origin`, `agent`), which the chat routes hold it to. They are signed with a
// key derived from SESSION_SECRET for this one purpose, so a widget token never verifies as a
// session token nor a session token as a widget token, whatever prefix is put on it.

export const WIDGET_TOKEN_PREFIX = 'iwt_';
/** How long a minted widget token lives: at most one hour (docs/authentication.md#widget-tokens). */
export const WIDGET_TOKEN_TTL_SECONDS = 60 * 60;
const ALG = 'HS256';
const AUDIENCE = 'intake-widget';
const MAX_IAT_SKEW_SECONDS = 60;
const slugRe = new RegExp(FIRM_SLUG_PATTERN);

const signingKey = (sessionSecret: string): Uint8Array =>
  createHmac('sha256', sessionSecret).update('intake widget token v1').digest();

export interface MintedWidgetToken {
  token: string;
  subject: string;
  expiresAt: Date;
}

/** What a widget key's token is bound to: the key, the page's origin and the one agent it may chat with. */
export interface WidgetTokenBinding {
  key: string;
  origin: string;
  agent: string;
  /** The session brought a solved ALTCHA challenge (claim `pow`): its chats may book. */
  altcha?: boolean;
}

/** A widget token for `firm`'s chat routes, valid for WIDGET_TOKEN_TTL_SECONDS. */
export async function mintWidgetToken(
  firm: string,
  sessionSecret: string,
  binding?: WidgetTokenBinding,
): Promise<MintedWidgetToken> {
  const now = Math.floor(Date.now() / 1000);
  const subject = newId('wgt', 12);
  const exp = now + WIDGET_TOKEN_TTL_SECONDS;
  const token = await signWidgetToken(
    { firm, subject, issuedAt: now, expiresAt: exp, ...(binding === undefined ? {} : { binding }) },
    sessionSecret,
  );
  return { token, subject, expiresAt: new Date(exp * 1000) };
}

/** Signs a widget token with exactly these claims (times in seconds); tests use it for bad lifetimes. */
export async function signWidgetToken(
  claims: {
    firm: string;
    subject: string;
    issuedAt: number;
    expiresAt: number;
    binding?: WidgetTokenBinding;
  },
  sessionSecret: string,
): Promise<string> {
  const bound =
    claims.binding === undefined
      ? {}
      : {
          wk: claims.binding.key,
          origin: claims.binding.origin,
          agent: claims.binding.agent,
          ...(claims.binding.altcha === true ? { pow: true } : {}),
        };
  const jwt = await new SignJWT({ typ: 'widget', firm: claims.firm, ...bound })
    .setProtectedHeader({ alg: ALG })
    .setSubject(claims.subject)
    .setAudience(AUDIENCE)
    .setIssuedAt(claims.issuedAt)
    .setExpirationTime(claims.expiresAt)
    .sign(signingKey(sessionSecret));
  return `${WIDGET_TOKEN_PREFIX}${jwt}`;
}

/**
 * The principal of a widget token and when it was issued (seconds), or null when the token is
 * malformed, forged, expired, issued in the future or meant to live longer than an hour.
 */
export async function verifyWidgetToken(
  token: string,
  sessionSecret: string,
): Promise<{ principal: WidgetPrincipal; issuedAt: number } | null> {
  if (!token.startsWith(WIDGET_TOKEN_PREFIX)) return null;
  try {
    const { payload } = await jwtVerify(token.slice(WIDGET_TOKEN_PREFIX.length), signingKey(sessionSecret), {
      algorithms: [ALG],
      audience: AUDIENCE,
      requiredClaims: ['exp', 'iat', 'sub', 'firm', 'typ'],
    });
    const { typ, firm, sub, iat, exp, wk, origin, agent, pow } = payload;
    if (typ !== 'widget' || typeof firm !== 'string' || !slugRe.test(firm)) return null;
    if (typeof sub !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') return null;
    if (iat > Date.now() / 1000 + MAX_IAT_SKEW_SECONDS) return null;
    if (exp - iat > WIDGET_TOKEN_TTL_SECONDS) return null;
    const principal: WidgetPrincipal = { kind: 'widget', firm, via: 'widget_token', subject: sub };
    if (wk !== undefined || origin !== undefined || agent !== undefined) {
      // Bound by a widget key: all three claims, or the token is not one this service made.
      if (typeof wk !== 'string' || typeof origin !== 'string' || typeof agent !== 'string') return null;
      if (pow !== undefined && pow !== true) return null;
      principal.binding = { key: wk, origin, agent, altcha: pow === true };
    }
    return { principal, issuedAt: iat };
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return null;
    throw err;
  }
}

/** How long after its expiry a token's origin still gets CORS headers (its `401` readable). */
const CORS_AFTER_EXPIRY_SECONDS = 7 * 24 * 60 * 60;

/**
 * The page origin a key's widget token was issued to, from its signature alone (no lookup), for
 * CORS: a token expired within the last week counts too, so the page can read its `401` and
 * renew the token (a tab that slept past the hour). Whether it may do anything is the route's to
 * judge; this only says whose page may read the answer.
 */
export async function widgetTokenOrigin(token: string, sessionSecret: string): Promise<string | undefined> {
  if (!token.startsWith(WIDGET_TOKEN_PREFIX)) return undefined;
  try {
    const { payload } = await jwtVerify(token.slice(WIDGET_TOKEN_PREFIX.length), signingKey(sessionSecret), {
      algorithms: [ALG],
      audience: AUDIENCE,
      clockTolerance: CORS_AFTER_EXPIRY_SECONDS,
    });
    return payload.typ === 'widget' && typeof payload.origin === 'string' ? payload.origin : undefined;
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) return undefined;
    throw err;
  }
}
