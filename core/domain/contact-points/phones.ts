import {
  isSupportedCountry,
  parsePhoneNumberFromString,
  searchPhoneNumbersInText,
  type CountryCode,
} from 'libphonenumber-js';
// The full metadata, for number types only (the default bundle cannot tell a premium-rate number).
import { parsePhoneNumberFromString as parseWithTypes } from 'libphonenumber-js/max';
import { RecentMemo } from '../../platform/recent-memo.js';

// Phone numbers as every area reads them (intake answers, leads, contacts, dialled numbers),
// with libphonenumber-js: E.164 out, a default country for numbers written without one.

export type { CountryCode };

/**
 * How many candidates findPhone parses before it gives up on a text. libphonenumber parses every
 * group of digits as a candidate (about 80 µs each): on text made of digit groups that was 0.8 s
 * at 100,000 characters, linear but long, so the search is bounded by candidates tried
 * (libphonenumber's own `maxTries`, "for degenerate cases where the text has a lot of false
 * positives"): ordinary speech with its dates and amounts stays far below it
 * (docs/webhooks.md#linear-text-scanning).
 */
export const MAX_PHONE_CANDIDATES = 200;

/** The first valid phone number in free text, in E.164; null when there is none (or none in 200 tries). */
export function findPhone(text: string, country: CountryCode = 'US'): string | null {
  const whole = parsePhoneNumberFromString(text.trim(), country);
  if (whole?.isValid()) return whole.number;
  // maxTries is in libphonenumber's matcher but not in its option type: passed as a variable.
  const options = { defaultCountry: country, maxTries: MAX_PHONE_CANDIDATES };
  // Lazily: the search stops at the first valid number instead of collecting them all.
  for (const found of searchPhoneNumbersInText(text, options)) {
    if (found.number.isValid()) return found.number.number;
  }
  return null;
}

const E164 = /^\+[1-9]\d{6,14}$/;

/** Number types whose caller pays the callee extra: the toll-fraud targets (libphonenumber's types). */
export type CostlyNumberType = 'PREMIUM_RATE' | 'SHARED_COST';
const COSTLY_TYPES: ReadonlySet<string> = new Set<CostlyNumberType>(['PREMIUM_RATE', 'SHARED_COST']);

/** A number the service may dial: E.164, possible for its country, and that country. */
export interface Dialable {
  e164: string;
  country: CountryCode;
  /** Set when the number is premium-rate or shared-cost, which only some firms may call. */
  costly?: CostlyNumberType;
}

/**
 * An E.164 number as a dialable destination: null unless it is written in E.164 and is a
 * possible number (right length) by libphonenumber-js (docs/calls.md#which-numbers-may-be-dialled).
 * Its country is the one libphonenumber names; a possible number it names none for (it is not
 * valid: a +1 area code no country uses, such as 555, or a range kept for fiction, such as the
 * UK's +44 7700 900…) is in the main country of its calling code (+1 → US, +44 → GB, +7 → RU),
 * which allowed_call_countries is checked against. Null for a calling code of no country
 * (+800, +882: libphonenumber's non-geographic numbers).
 */
export function parseDialable(e164: string): Dialable | null {
  const known = dialableSeen.get(e164);
  if (known !== undefined) return known;
  const found = parseDialableOnce(e164);
  // A request parses its number several times (the route, the dial gate, the call): the answers
  // of the last minute are kept (a pure function of the text).
  dialableSeen.set(e164, found === null ? null : Object.freeze(found));
  return found;
}

/** Exported for its bound's test: numbers parsed in the last minute, at most 4,096. */
export const dialableSeen = new RecentMemo<string, Dialable | null>(4096, 60_000);

function parseDialableOnce(e164: string): Dialable | null {
  if (!E164.test(e164)) return null;
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed === undefined || !parsed.isPossible()) return null;
  // Without a country of its own, the calling code's countries the number's length fits, the
  // main one first (libphonenumber's metadata lists it first); isPossible() judged the number by
  // the main country's lengths, so it is among them.
  const country = parsed.country ?? parsed.getPossibleCountries()[0];
  if (country === undefined) return null;
  const type = parseWithTypes(e164)?.getType();
  return type !== undefined && COSTLY_TYPES.has(type)
    ? { e164: parsed.number, country, costly: type as CostlyNumberType }
    : { e164: parsed.number, country };
}

/** An ISO 3166-1 alpha-2 code (upper case) that libphonenumber knows. */
export function isKnownCountry(code: string): code is CountryCode {
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code);
}

/** A phone number as a contact stores it: E.164, and the extension when one was written. */
export interface NormalizedPhone {
  e164: string;
  extension?: string;
}

/**
 * A phone number given on its own (a form field, a CSV cell): the whole text must be one valid
 * number — national numbers read in `country`, international ones (+…) in their own; text
 * around a number is not searched for one. Null when it is not a valid number.
 */
export function normalizePhone(text: string, country: CountryCode): NormalizedPhone | null {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed.length > 64) return null;
  const parsed = parsePhoneNumberFromString(trimmed, { defaultCountry: country, extract: false });
  if (parsed === undefined || !parsed.isValid()) return null;
  return parsed.ext === undefined ? { e164: parsed.number } : { e164: parsed.number, extension: parsed.ext };
}

/** A phone number given on its own, in E.164 (its extension dropped); null when it is not valid. */
export function toE164(text: string, country: CountryCode = 'US'): string | null {
  return normalizePhone(text, country)?.e164 ?? null;
}

/**
 * A phone number given on its own where it is a number to call or not to call (a lead's phone,
 * the do-not-call list, an opt-out): a valid number as normalizePhone reads it, or else any
 * number the service may dial (parseDialable: a possible number, such as +1 555 555 0123, which
 * is not valid), written any common way. Every number create-outbound-call accepts can thus be
 * a lead's and be put on the do-not-call list. Null when it is neither.
 */
export function normalizeDialablePhone(text: string, country: CountryCode): NormalizedPhone | null {
  const valid = normalizePhone(text, country);
  if (valid !== null) return valid;
  const trimmed = text.trim();
  if (trimmed === '' || trimmed.length > 64) return null;
  const parsed = parsePhoneNumberFromString(trimmed, { defaultCountry: country, extract: false });
  if (parsed === undefined || parseDialable(parsed.number) === null) return null;
  return parsed.ext === undefined ? { e164: parsed.number } : { e164: parsed.number, extension: parsed.ext };
}

/** normalizeDialablePhone in E.164 (its extension dropped); null when it is neither valid nor dialable. */
export function toDialableE164(text: string, country: CountryCode = 'US'): string | null {
  return normalizeDialablePhone(text, country)?.e164 ?? null;
}

/**
 * The ways a person commonly types this number in its own country, for a text search that finds
 * only what was typed (Clio's contact `query`): the national format ("(212) 555-0142"), its
 * groups joined by dashes ("212-555-0142"), the national digits alone ("2125550142", which also
 * finds "12125550142" and "+12125550142" inside them) and E.164. Without duplicates; empty
 * for text that is not a valid number.
 */
export function nationalForms(e164: string): string[] {
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed === undefined || !parsed.isValid()) return [];
  const groups = parsed
    .formatInternational()
    .replace(`+${parsed.countryCallingCode}`, '')
    .trim()
    .split(/[\s-]+/);
  return [
    ...new Set([parsed.formatNational(), groups.join('-'), String(parsed.nationalNumber), parsed.number]),
  ];
}

/** The country of an E.164 number, when libphonenumber can name one. */
export function countryOf(e164: string): CountryCode | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}
