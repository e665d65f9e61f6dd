// Email addresses as every area reads them: trimmed and lower-cased.

/** An address's domain (a pattern's text): labels separated by dots, the last of letters only. */
const DOMAIN = String.raw`[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`;

/**
 * An email address somewhere in a text (not anchored: use it to find, not to validate).
 *
 * Linear on any text (docs/webhooks.md#linear-text-scanning): the local part starts only where a
 * run of its characters starts (the lookbehind) and holds at most 64 (RFC 5321), so the engine
 * never restarts inside a long run; each domain run follows its own '@' and is scanned once. The
 * unanchored /[...]+@.../ this replaces was quadratic: 13 s on 100,000 characters without a space.
 */
export const EMAIL = new RegExp(`(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@${DOMAIN}`);

/** The first email address in free text, lower-cased; null when there is none. */
export function findEmail(text: string): string | null {
  const match = EMAIL.exec(text);
  return match === null ? null : match[0].toLowerCase();
}

/**
 * An email given as the answer to an email question: written ("jane@example.com") or spoken,
 * as voice transcripts have it ("jane dot doe at example dot com").
 */
export function readEmailAnswer(text: string): string | null {
  const written = findEmail(text);
  if (written !== null) return written;
  // Each starts only where a run of white space starts (the lookbehind): linear on long runs.
  const spoken = text
    .replace(/(?<!\s)\s+at\s+/gi, '@')
    .replace(/(?<!\s)\s+dot\s+/gi, '.')
    .replace(/(?<!\s)\s*@\s*/g, '@');
  return findEmail(spoken);
}

/** The longest address SMTP carries (RFC 5321: 254 characters in a path, 64 in the local part). */
const MAX_EMAIL = 254;
const MAX_LOCAL_PART = 64;
/**
 * One whole address: a local part of any characters RFC 5322 allows unquoted (o'brien@, not
 * only the letters, digits and ._%+- that EMAIL looks for in free text), then the same domain.
 */
const WHOLE_EMAIL = new RegExp(`^[A-Za-z0-9!#$%&'*+/=?^_\`{|}~.-]{1,64}@${DOMAIN}$`);

/**
 * An email address given on its own (a form field, a CSV cell): trimmed and lower-cased, and
 * valid as a whole (one address, no text around it, no empty or doubled dots). Null otherwise.
 */
export function normalizeEmail(text: string): string | null {
  const email = text.trim().toLowerCase();
  if (email.length > MAX_EMAIL || !WHOLE_EMAIL.test(email)) return null;
  const [local = ''] = email.split('@');
  if (local.length > MAX_LOCAL_PART || local.startsWith('.') || local.endsWith('.') || email.includes('..')) {
    return null;
  }
  return email;
}
