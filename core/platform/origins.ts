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
