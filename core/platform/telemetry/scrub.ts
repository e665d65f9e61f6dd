// What a span may carry out of the process. Applied to every span just before export, so no
// instrumentation's default can leak: query strings (a widget key travels in `?key=`) are cut
// from URLs, path segments long enough to be a token (a Slack webhook URL's last segment is its
// secret) are cut from outgoing URLs, and a phone number anywhere is masked to its last 4 digits.

type AttributeValue = string | number | boolean | (string | number | boolean | null | undefined)[];
export type Attributes = Record<string, AttributeValue | undefined>;

/** URL-valued attributes of the HTTP instrumentation (old and stable semantic conventions). */
const URL_KEYS = new Set(['url.full', 'http.url', 'http.target', 'url.path', 'http.route']);
const QUERY_KEYS = new Set(['url.query']);

// E.164 (+ and up to 15 digits) or a bare run of 7+ digits, standing alone (ids made of
// base64url characters never match: their digits touch letters).
const PHONE = /(?<![A-Za-z0-9])\+?\d{7,15}(?![A-Za-z0-9])/g;
// local@domain.tld: a domain with a dot, so `user@localhost` and `a@b` are left alone. The local
// part takes what an address may carry unquoted (o'brien@ masked whole, not from the b) except
// the characters that separate the parts of job ids and URLs (| / ? # & =), so the id or URL
// around an address keeps its other parts. Linear: the local part and each label are runs of
// characters the next part cannot start with.
const EMAIL = /(?<![A-Za-z0-9!$%'*+^_`{}~.-])[A-Za-z0-9!$%'*+^_`{}~.-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,63}/g;
const TOKEN_SEGMENT = /^[A-Za-z0-9_-]{16,}$/;
/** Paths that are secrets whatever their length: a Slack incoming webhook's /services/T…/B…/<secret>. */
const SECRET_PATHS: [RegExp, string][] = [
  [/^\/services\/[^/]+\/[^/]+\/[^/]+/, '/services/:team/:hook/:secret'],
];

export function maskPhones(text: string): string {
  return text.replace(PHONE, (number) => `…${number.slice(-4)}`);
}

export function maskEmails(text: string): string {
  return text.replace(EMAIL, '[email]');
}

/** Emails, then phone numbers, masked: what a span name, an attribute or a log line may carry. */
export const maskPersonal = (text: string): string => maskPhones(maskEmails(text));

/** A URL (or a path) without its query string and, for outgoing calls, without token-like segments. */
export function scrubUrl(value: string, outgoing: boolean): string {
  const cut = value.split(/[?#]/, 1)[0] ?? '';
  if (!outgoing) return cut;
  const match = /^([a-z][a-z0-9+.-]*:\/\/[^/]*)?(.*)$/i.exec(cut);
  const origin = match?.[1] ?? '';
  let path = match?.[2] ?? '';
  for (const [pattern, replacement] of SECRET_PATHS) path = path.replace(pattern, replacement);
  path = path
    .split('/')
    .map((segment) => (TOKEN_SEGMENT.test(segment) ? ':redacted' : segment))
    .join('/');
  // user:password@ in an origin is a secret too.
  return origin.replace(/\/\/[^@/]*@/, '//') + path;
}

function scrubValue(key: string, value: AttributeValue, outgoing: boolean): AttributeValue {
  if (typeof value !== 'string') {
    return Array.isArray(value)
      ? value.map((item) => (typeof item === 'string' ? maskPersonal(item) : item))
      : value;
  }
  if (QUERY_KEYS.has(key)) return '[redacted]';
  // A firm's slug is its public name in every URL, not a phone: `firm-50473506` stays whole.
  if (key === 'intake.firm') return value;
  if (URL_KEYS.has(key)) return maskPersonal(scrubUrl(value, outgoing));
  return maskPersonal(value);
}

export function scrubAttributes(attributes: Attributes, outgoing: boolean): Attributes {
  const clean: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    clean[key] = value === undefined ? value : scrubValue(key, value, outgoing);
  }
  return clean;
}
