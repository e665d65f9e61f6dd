import { parse } from 'csv-parse/sync';
import { clip, invalidRequest, tooManyRows } from '../../platform/errors.js';
import { normalizeDialablePhone, type CountryCode } from '../contact-points/phones.js';

// What a firm sends to its do-not-call list, read as the rest of the service reads phone numbers
// (core/domain/contact-points/phones.ts): any common writing of one valid number, or of any number
// the service may dial (a possible one, such as +1 555 555 0123: what can be dialled can be
// listed), national numbers in the request's defaultCountry (US unless it says), stored in E.164.
// Any other is reported with its position and the list takes the others.

/** The most numbers one request adds (a `phones` array or a CSV's rows): more is 413 too_many_rows. */
export const MAX_DNC_PHONES = 5_000;
/** The most characters of CSV one import reads (about 200 characters a row at 5,000 rows). */
export const MAX_DNC_CSV_CHARS = 1_000_000;
/** The most invalid numbers a response lists (the counts count them all). */
export const MAX_LISTED_INVALID = 100;

export interface InvalidPhone {
  /** Its position in `phones` (from 0), or its line in the CSV (from 1). */
  at: number;
  value: string;
  reason: string;
}

const reasonFor = (value: string): string =>
  value.trim() === '' ? 'is empty' : 'is not a valid phone number (E.164, or national for defaultCountry)';

/** The numbers of a `phones` array in E.164, and the ones that are not valid. */
export function readPhones(
  values: readonly string[],
  country: CountryCode,
): { phones: string[]; invalid: InvalidPhone[] } {
  if (values.length > MAX_DNC_PHONES) throw tooManyDncPhones(values.length);
  const phones: string[] = [];
  const invalid: InvalidPhone[] = [];
  values.forEach((value, at) => {
    const e164 = normalizeDialablePhone(value, country)?.e164;
    if (e164 === undefined) invalid.push({ at, value: clip(value), reason: reasonFor(value) });
    else phones.push(e164);
  });
  return { phones, invalid };
}

const PHONE_HEADERS = new Set([
  'phone',
  'phone number',
  'phone_number',
  'number',
  'telephone',
  'tel',
  'mobile',
  'cell',
]);

/**
 * The numbers of a CSV import: one number per row, in the column headed phone (or "phone
 * number", "number", "telephone", "mobile", "cell"; any case) when the first row is such a
 * header, else in the first column with no header. Blank lines are skipped; a CSV that cannot be
 * parsed (an unclosed quote) is a 400 naming its line.
 */
export function readCsvPhones(
  csv: string,
  country: CountryCode,
): { rows: number; phones: string[]; invalid: InvalidPhone[] } {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parse(csv, {
      bom: true,
      info: true,
      skip_empty_lines: true,
      relax_column_count: true,
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  } catch (err) {
    throw invalidRequest(`The CSV could not be read: ${clip((err as Error).message)}`, [
      { path: '/csv', message: 'is not valid CSV' },
    ]);
  }
  let column = 0;
  let first = 0;
  const header = records[0]?.record.map((cell) => cell.trim().toLowerCase()) ?? [];
  const named = header.findIndex((cell) => PHONE_HEADERS.has(cell));
  if (named >= 0) {
    column = named;
    first = 1;
  }
  const rows = records.length - first;
  if (rows > MAX_DNC_PHONES) throw tooManyDncPhones(rows);
  const phones: string[] = [];
  const invalid: InvalidPhone[] = [];
  for (let r = first; r < records.length; r++) {
    const { record, info } = records[r]!;
    const value = record[column] ?? '';
    // info.lines is the line the record ends on; a quoted cell may span lines.
    const line = info.lines - record.reduce((n, cell) => n + (cell.split('\n').length - 1), 0);
    const e164 = normalizeDialablePhone(value, country)?.e164;
    if (e164 === undefined) invalid.push({ at: line, value: clip(value), reason: reasonFor(value) });
    else phones.push(e164);
  }
  return { rows, phones, invalid };
}

const tooManyDncPhones = (count: number) =>
  tooManyRows(
    `At most ${MAX_DNC_PHONES.toLocaleString('en-US')} numbers are added per request; this one has ${count.toLocaleString('en-US')}. Send them in parts.`,
  );
