import { quote } from '../../platform/errors.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { normalizePhone, type CountryCode } from '../contact-points/phones.js';

// One row of a contacts import, checked and normalised (docs/contacts.md#rows). Pure: no I/O.
//
// A row is an error when it is not an object, when a field has the wrong type or is too long,
// or when it has neither a valid phone nor a valid email. A phone that is present but invalid
// is an error even with a valid email (docs/contacts.md#rows): a contact we cannot call is not
// what the firm meant to import. An email that is present but invalid, beside a valid phone,
// is not an error: the contact is imported by its phone, without that email.

/** The text fields a contact may carry besides phone, email and tags (docs/contacts.md#import). */
export const CONTACT_TEXT_FIELDS = [
  'first_name',
  'last_name',
  'name',
  'company',
  'notes',
  'source',
  'external_id',
] as const;
type TextField = (typeof CONTACT_TEXT_FIELDS)[number];

/** Every field name with a meaning; any other string field of a row is kept under `custom`. */
export const CONTACT_FIELDS = [...CONTACT_TEXT_FIELDS, 'phone', 'email', 'tags'] as const;

const MAX_TEXT: Record<TextField, number> = {
  first_name: 200,
  last_name: 200,
  name: 400,
  company: 400,
  notes: 10_000,
  source: 200,
  external_id: 200,
};
const MAX_TAGS = 50;
const MAX_TAG = 100;
const MAX_CUSTOM_FIELDS = 50;
const MAX_CUSTOM_KEY = 100;
const MAX_CUSTOM_VALUE = 2000;
/** A reason lists at most this many problems of one row. */
const MAX_PROBLEMS = 3;

/** A custom field: kept as a pair, since a field name may be anything ("a.b", "$x", "__proto__"). */
export interface CustomField {
  key: string;
  value: string;
}

export interface ContactFields {
  first_name?: string;
  last_name?: string;
  name?: string;
  company?: string;
  notes?: string;
  source?: string;
  external_id?: string;
  /** E.164. */
  phone?: string;
  phone_extension?: string;
  /** Trimmed and lower-cased. */
  email?: string;
  tags: string[];
  custom: CustomField[];
}

export type ParsedRow = { ok: true; fields: ContactFields } | { ok: false; reason: string };

const TEXT_FIELD_SET = new Set<string>(CONTACT_TEXT_FIELDS);

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Whether a key or string anywhere in the row holds the NUL character, which a stored document
 * cannot (PostgreSQL-backed stores refuse it). The request keeps rows as JSON text, so this row
 * is an error row rather than the whole batch a 400. Iterative: any depth the body allows.
 */
function holdsNul(row: Record<string, unknown>): boolean {
  const pending: unknown[] = [row];
  for (let node = pending.pop(); pending.length > 0 || node !== undefined; node = pending.pop()) {
    if (typeof node === 'string') {
      if (node.includes('\u0000')) return true;
    } else if (typeof node === 'object' && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        if (key.includes('\u0000')) return true;
        pending.push(value);
      }
    }
  }
  return false;
}

/** Tags as an array of strings, or one string of tags separated by commas or semicolons (a CSV cell). */
function readTags(value: unknown, problems: string[]): string[] {
  const raw = typeof value === 'string' ? value.split(/[,;]/) : value;
  if (!Array.isArray(raw) || raw.some((t) => typeof t !== 'string')) {
    problems.push('"tags" must be a string or an array of strings');
    return [];
  }
  const tags = [...new Set((raw as string[]).map((t) => t.trim()).filter((t) => t !== ''))];
  if (tags.length > MAX_TAGS) problems.push(`"tags" has more than ${MAX_TAGS} tags`);
  if (tags.some((t) => t.length > MAX_TAG)) problems.push(`a tag is longer than ${MAX_TAG} characters`);
  return tags;
}

function readCustom(key: string, value: unknown, custom: CustomField[], problems: string[]): void {
  if (typeof value !== 'string') {
    problems.push(`custom field ${quote(key)} must be a string, not ${typeName(value)}`);
    return;
  }
  // Blank is not given, whatever the name (a CSV column left without a header, its cells empty).
  const text = value.trim();
  if (text === '') return;
  if (key.trim() === '' || key.length > MAX_CUSTOM_KEY) {
    problems.push(`a custom field name must be 1 to ${MAX_CUSTOM_KEY} characters (${quote(key)})`);
    return;
  }
  if (text.length > MAX_CUSTOM_VALUE) {
    problems.push(`custom field ${quote(key)} is longer than ${MAX_CUSTOM_VALUE} characters`);
    return;
  }
  custom.push({ key, value: text });
}

/**
 * Checks and normalises one row. Absent, null and blank fields count as not given. Phones are
 * read with `country` unless written internationally, and stored in E.164; emails are trimmed
 * and lower-cased.
 */
export function parseContactRow(row: unknown, country: CountryCode): ParsedRow {
  if (!isPlainObject(row)) return { ok: false, reason: `the row is ${typeName(row)}, not an object` };
  if (holdsNul(row)) return { ok: false, reason: 'the row holds the NUL character (\\u0000)' };
  const problems: string[] = [];
  const fields: ContactFields = { tags: [], custom: [] };
  let phoneText: string | undefined;
  let emailText: string | undefined;
  // Object.entries: own fields only, so "__proto__" or "constructor" are plain custom names.
  for (const [key, value] of Object.entries(row)) {
    if (value === null || value === undefined) continue;
    if (TEXT_FIELD_SET.has(key)) {
      const field = key as TextField;
      // External ids are often numeric in JSON exports: a finite number is read as its text.
      const text =
        field === 'external_id' && typeof value === 'number' && Number.isFinite(value)
          ? String(value)
          : value;
      if (typeof text !== 'string') {
        problems.push(`"${field}" must be a string, not ${typeName(value)}`);
        continue;
      }
      const trimmed = text.trim();
      if (trimmed === '') continue;
      if (trimmed.length > MAX_TEXT[field]) {
        problems.push(`"${field}" is longer than ${MAX_TEXT[field]} characters`);
        continue;
      }
      fields[field] = trimmed;
    } else if (key === 'phone' || key === 'email') {
      if (typeof value !== 'string') {
        problems.push(`"${key}" must be a string, not ${typeName(value)}`);
        continue;
      }
      if (value.trim() === '') continue;
      if (key === 'phone') phoneText = value;
      else emailText = value;
    } else if (key === 'tags') {
      fields.tags = readTags(value, problems);
    } else if (key === 'custom' && isPlainObject(value)) {
      for (const [customKey, customValue] of Object.entries(value)) {
        if (customValue !== null && customValue !== undefined) {
          readCustom(customKey, customValue, fields.custom, problems);
        }
      }
    } else {
      readCustom(key, value, fields.custom, problems);
    }
  }
  if (fields.custom.length > MAX_CUSTOM_FIELDS) {
    problems.push(`the row has more than ${MAX_CUSTOM_FIELDS} custom fields`);
  }
  if (new Set(fields.custom.map((c) => c.key)).size !== fields.custom.length) {
    problems.push('a custom field is given twice (as a field and under "custom")');
  }
  if (phoneText !== undefined) {
    const phone = normalizePhone(phoneText, country);
    if (phone === null) {
      problems.push(
        `"phone" ${quote(phoneText.trim())} is not a valid phone number (numbers without a country code are read as ${country})`,
      );
    } else {
      fields.phone = phone.e164;
      if (phone.extension !== undefined) fields.phone_extension = phone.extension;
    }
  }
  if (emailText !== undefined) {
    const email = normalizeEmail(emailText);
    if (email !== null) fields.email = email;
    else if (fields.phone === undefined) {
      problems.push(`"email" ${quote(emailText.trim())} is not a valid email address`);
    }
  }
  // Invalid ones were reported above: here neither was given at all.
  if (problems.length === 0 && fields.phone === undefined && fields.email === undefined) {
    problems.push('the row has neither a phone nor an email');
  }
  if (problems.length > 0) return { ok: false, reason: summarise(problems) };
  return { ok: true, fields };
}

/** The row's problems in one sentence (request values in it are quoted and clipped). */
function summarise(problems: string[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS).join('; ');
  const more = problems.length - MAX_PROBLEMS;
  return more > 0 ? `${shown}; and ${more} more` : shown;
}
