import { AppError, quote } from '../../platform/errors.js';

// Web origins as widget keys and CORS_ORIGINS hold them: exactly `scheme://host[:port]`, the way a
// browser writes its Origin header (lower-case host, no default port, no path), so that checking a
// request's Origin is a plain string comparison (docs/widget.md#widget-keys).

/** The pattern of one origin, for schemas and the CORS_ORIGINS variable (IPv6 hosts in brackets). */
export const ORIGIN_PATTERN =
  '^https?://(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\\[[0-9a-f:.]+\\])(?::[0-9]{1,5})?$';

const originRe = new RegExp(ORIGIN_PATTERN);

/**
 * Why `value` is not an origin as a browser sends it (a reason a person can act on), or null
 * when it is one. The URL parser is the judge: what it would write differently (a default port,
 * a trailing slash, upper case) is refused rather than rewritten, so the stored value is the
 * one the Origin header will carry.
 */
export function originProblem(value: string): string | null {
  if (!originRe.test(value)) return 'must be scheme://host[:port] (http or https, lower case, no path)';
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (parsed.origin !== value) return `is written ${parsed.origin} by browsers`;
  return null;
}

/** 403 origin_not_allowed: the page asking is not on one of the key's origins, or not the token's. */
export const originNotAllowed = (origin: string | undefined, holder: 'key' | 'token' = 'key'): AppError =>
  new AppError(
    403,
    'origin_not_allowed',
    origin === undefined
      ? 'The request has no Origin header: a widget key works only from a web page on one of its allowed origins.'
      : holder === 'key'
        ? `The origin ${quote(origin)} is not one of this widget key's allowed origins; add it to allowed_origins.`
        : `This widget token was issued to another origin than ${quote(origin)}; ask for a session from this page.`,
  );
