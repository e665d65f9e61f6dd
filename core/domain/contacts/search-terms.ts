import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { invalidRequest } from '../../platform/errors.js';

// GET /api/contacts?q= searches names, phones and emails, case- and accent-insensitively, by
// prefix. Each contact stores its search terms, folded at write time: the words of its names,
// its email (whole, local part and domain) and its phone's digits (international, national,
// and national as dialled, e.g. 02079460018). A query matches a contact when every query word
// begins one of its terms: an anchored regex on the multikey index {firm, search_terms}, which
// MongoDB serves as an index range scan (no per-request scan of the firm's contacts, and no
// case-insensitive regex, which no index serves). FerretDB (tests, local) scans, as it does
// for every read but a bare _id.

/** Lower case without accents: "José" → "jose". */
export function fold(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
}

const MAX_TERMS = 40;
const MAX_QUERY_WORDS = 5;

function nameTerms(text: string): string[] {
  const terms: string[] = [];
  for (const word of fold(text).split(/\s+/)) {
    if (word === '') continue;
    terms.push(word);
    // "mary-jane", "o'brien", "j.r.": also each part, and the word without its punctuation.
    const parts = word.split(/[-'’.]+/).filter((p) => p !== '');
    if (parts.length > 1) terms.push(...parts, parts.join(''));
  }
  return terms;
}

function phoneTerms(e164: string): string[] {
  const digits = e164.replace(/\D/g, '');
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed === undefined) return [digits];
  return [digits, String(parsed.nationalNumber), parsed.formatNational().replace(/\D/g, '')];
}

/** The folded terms a contact is found by. */
export function contactSearchTerms(contact: {
  first_name?: string;
  last_name?: string;
  name?: string;
  phone?: string;
  email?: string;
}): string[] {
  const terms: string[] = [];
  for (const text of [contact.first_name, contact.last_name, contact.name]) {
    if (text !== undefined) terms.push(...nameTerms(text));
  }
  if (contact.email !== undefined) {
    const [local = '', domain = ''] = contact.email.split('@');
    terms.push(contact.email, local, domain);
  }
  if (contact.phone !== undefined) terms.push(...phoneTerms(contact.phone));
  return [...new Set(terms.filter((t) => t !== ''))].slice(0, MAX_TERMS);
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/**
 * The prefixes a query asks for: a phone-looking query ("+1 (212) 555") is one run of digits;
 * anything else is its folded words, each to begin a term. At most 5 words.
 */
export function queryPrefixes(q: string): string[] {
  const trimmed = q.trim();
  const digits = trimmed.replace(/[\s()+.\-/]/g, '');
  if (/^\d{2,}$/.test(digits)) return [digits];
  const words = [...new Set(fold(trimmed).split(/\s+/))].filter((w) => w !== '');
  if (words.length > MAX_QUERY_WORDS) {
    throw invalidRequest(`Search with at most ${MAX_QUERY_WORDS} words.`, [
      { path: '/q', message: `has more than ${MAX_QUERY_WORDS} words` },
    ]);
  }
  return words;
}

/** The anchored pattern of one prefix (request text, escaped: it never acts as a regex). */
export const prefixPattern = (prefix: string): string => `^${escapeRegex(prefix)}`;
