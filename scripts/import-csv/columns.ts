import { CONTACT_FIELDS } from '../../core/domain/contacts/contact-row.js';

// CSV header names to contact fields: case, spaces, underscores, hyphens and dots do not
// count ("First Name", "first_name", "FIRST-NAME" → first_name), plus a few common synonyms.
// Any other column is sent as is and kept under the contact's `custom`.

const fold = (header: string): string =>
  header
    .trim()
    .toLowerCase()
    .replace(/[\s_.-]+/g, '');

const SYNONYMS: Record<string, (typeof CONTACT_FIELDS)[number]> = {
  givenname: 'first_name',
  forename: 'first_name',
  surname: 'last_name',
  familyname: 'last_name',
  fullname: 'name',
  phonenumber: 'phone',
  telephone: 'phone',
  mobile: 'phone',
  mobilephone: 'phone',
  cellphone: 'phone',
  emailaddress: 'email',
  email: 'email',
  organization: 'company',
  organisation: 'company',
  companyname: 'company',
  note: 'notes',
  tag: 'tags',
};

const FIELD_BY_FOLDED = new Map<string, string>([
  ...CONTACT_FIELDS.map((field) => [fold(field), field] as const),
  ...Object.entries(SYNONYMS),
]);

export interface ColumnMap {
  /** The request field of each CSV column, by position. */
  names: string[];
  /** Columns kept under custom because another column already gave their field. */
  shadowed: Array<{ header: string; field: string; by: string }>;
}

/** The field each header names; a second column for one field is kept under custom by its header. */
export function mapColumns(headers: string[]): ColumnMap {
  const names: string[] = [];
  const shadowed: ColumnMap['shadowed'] = [];
  const taken = new Map<string, string>();
  headers.forEach((raw, i) => {
    const header = raw.trim() === '' ? `column ${i + 1}` : raw.trim();
    const field = FIELD_BY_FOLDED.get(fold(header));
    if (field === undefined) {
      names.push(header);
    } else if (taken.has(field)) {
      shadowed.push({ header, field, by: taken.get(field)! });
      names.push(header);
    } else {
      taken.set(field, header);
      names.push(field);
    }
  });
  return { names, shadowed };
}

/** One CSV record as a contact row: blank cells left out. Built from entries, so any header is a plain key. */
export function rowOf(columns: ColumnMap, record: string[]): Record<string, string> {
  const entries: Array<[string, string]> = [];
  record.forEach((cell, i) => {
    const name = columns.names[i] ?? `column ${i + 1}`;
    if (cell.trim() !== '') entries.push([name, cell]);
  });
  return Object.fromEntries(entries);
}
