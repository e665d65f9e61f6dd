import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// The cookie that binds an OAuth connect flow to the browser that started it (docs/clio.md,
// "Who may finish a connection"; OAuth 2.0 Security BCP, RFC 9700 §4.7: the state must be tied to
// the user agent). `connect` sets it (or keeps the one the browser has, so one browser may run
// several flows) and the state records only its hash; the callback and the confirmation are
// refused in a browser without it.
//
// Its name: with an https PUBLIC_BASE_URL, `__Host-intake_oauth`, Secure, Path=/, no Domain: the
// `__Host-` prefix makes browsers refuse the cookie unless it is all three, so neither a sibling
// subdomain nor a plain-http page can plant or overwrite it (RFC 6265bis §4.1.3.2). Browsers also
// refuse a `__Host-` (or any Secure) cookie set over plain http, so for local runs and tests on
// http://127.0.0.1 the cookie is `intake_oauth`, without the prefix and without Secure: there is
// no TLS to keep it to, and production runs behind https. HttpOnly (no script reads it);
// SameSite=Lax, because the callback is a top-level navigation from Clio's site (Strict would
// keep the cookie from it) while a cross-site POST (a forged confirmation) carries no Lax cookie.

/** How long a flow may take, connect to confirmation (the state's and the confirmation's lifetime). */
export const CONNECT_FLOW_SECONDS = 600;

export interface ConnectCookie {
  name: string;
  secure: boolean;
}

export function connectCookie(publicBaseUrl: string): ConnectCookie {
  const secure = new URL(publicBaseUrl).protocol === 'https:';
  return { name: secure ? '__Host-intake_oauth' : 'intake_oauth', secure };
}

const KEY = /^[A-Za-z0-9_-]{43}$/;

/** The browser's key: the one its cookie holds when well formed, else a new one (256 bits). */
export function browserKeyOf(cookieValue: string | undefined): { key: string; fresh: boolean } {
  if (cookieValue !== undefined && KEY.test(cookieValue)) return { key: cookieValue, fresh: false };
  return { key: randomBytes(32).toString('base64url'), fresh: true };
}

export function setCookieHeader(cookie: ConnectCookie, key: string): string {
  return `${cookie.name}=${key}; Path=/; Max-Age=${CONNECT_FLOW_SECONDS}; HttpOnly; SameSite=Lax${cookie.secure ? '; Secure' : ''}`;
}

/** What a state or a confirmation keeps of the browser: the key's hash, never the key. */
export const browserBinding = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Whether the browser presenting `key` (its cookie, if any) is the one `binding` was made for. */
export function sameBrowser(binding: string, key: string | undefined): boolean {
  if (key === undefined || !KEY.test(key)) return false;
  const presented = Buffer.from(browserBinding(key), 'hex');
  const expected = Buffer.from(binding, 'hex');
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** The value of the cookie `name` in a Cookie header, if the browser sent one. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
