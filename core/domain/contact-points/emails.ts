// Email addresses as every area reads them: trimmed and lower-cased.

/** An email address somewhere in a text (not anchored: use it to find, not to validate). */
export const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/;

/** The first email address in free text, lower-cased; null when there is none. */
export function findEmail(text: string): string | null {
  const match = EMAIL.exec(text);
  return match === null ? null : match[0].toLowerCase().replace(/\.+$/, '');
}

/**
 * An email given as the answer to an email question: written ("jane@example.com") or spoken,
 * as voice transcripts have it ("jane dot doe at example dot com").
 */
export function readEmailAnswer(text: string): string | null {
  const written = findEmail(text);
  if (written !== null) return written;
  const spoken = text
    .replace(/\s+at\s+/gi, '@')
    .replace(/\s+dot\s+/gi, '.')
    .replace(/\s*@\s*/g, '@');
  return findEmail(spoken);
}

/** The longest address SMTP carries (RFC 5321: 254 characters in a path, 64 in the local part). */
const MAX_EMAIL = 254;
const MAX_LOCAL_PART = 64;
const WHOLE_EMAIL = new RegExp(`^${EMAIL.source}$`);

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
