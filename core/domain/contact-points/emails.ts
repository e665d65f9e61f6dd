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

const WHOLE_EMAIL = new RegExp(`^${EMAIL.source}$`);

/** A field that should hold one email address: trimmed and lower-cased; null when it does not. */
export function normaliseEmail(value: string): string | null {
  const email = value.trim().toLowerCase();
  return email.length <= 254 && WHOLE_EMAIL.test(email) ? email : null;
}
