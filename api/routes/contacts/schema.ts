import { Type, type TSchema } from '@sinclair/typebox';
import { Body, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

export const ImportContactsBody = Body({
  firmSlug: FirmSlug,
  contacts: Type.Array(
    Type.Unknown({
      description:
        'A contact: first_name, last_name, name, phone, email, company, notes, source, external_id ' +
        '(strings; external_id also a number), tags (array of strings, or one string separated by commas); ' +
        'other string fields are kept under custom',
    }),
    {
      description:
        'At most 5,000 rows (more: 413 too_many_rows, nothing imported). Each row is checked on its own: ' +
        'one that is not an object, has a field of the wrong type, or has neither a valid phone nor a valid ' +
        'email (or an invalid phone) is an error row of the result, not a 400',
    },
  ),
  defaultCountry: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z]{2}$',
      description: 'ISO 3166-1 alpha-2 country of phone numbers written without a country code; default US',
    }),
  ),
});

const ImportCounts = {
  imported: Type.Integer({ minimum: 0 }),
  duplicates: Type.Integer({
    minimum: 0,
    description: 'Rows whose phone or email a contact of the firm has',
  }),
  errors: Type.Integer({ minimum: 0 }),
  error_rows: Type.Array(
    Type.Object({
      index: Type.Integer({ minimum: 0, description: 'Position of the row in contacts' }),
      reason: Type.String(),
    }),
    { maxItems: 100, description: 'The first 100 error rows' },
  ),
};

export const ImportContactsResponse = Type.Object(ImportCounts, {
  description: 'imported + duplicates + errors = the number of rows',
});

export const ImportProcessing = Type.Object({
  job_id: Type.String(),
  status: Type.Literal('processing'),
});

export const ImportJobParams = Type.Object({ job_id: Id });

export const ImportJobResponse = Type.Union([
  Type.Object({ job_id: Type.String(), status: Type.Literal('completed'), ...ImportCounts }),
  Type.Object({ job_id: Type.String(), status: Type.Literal('failed'), message: Type.String() }),
]);

export const ListContactsQuery = Type.Object({
  firmSlug: ListFirmSlug,
  q: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'Search: every word begins a word of the name, the email (or its local part or domain), or the ' +
        "phone's digits (international or national); case- and accent-insensitive. Empty or blank: no search (every contact), " +
        'as a search box left empty sends it',
    }),
  ),
  limit: Limit(1000, 50),
  cursor: Type.Optional(
    // Its length is decodeCursor's to judge (400 invalid_cursor), as common.ts's Cursor.
    Type.String({
      description:
        'next_cursor of the previous page; "" or absent for the first. Bound to the firm and q: another is 400 invalid_cursor',
    }),
  ),
});

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ContactRecord = Type.Object({
  id: Type.String(),
  firm: Type.String(),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  name: Nullable(Type.String()),
  phone: Nullable(Type.String({ description: 'E.164' })),
  phone_extension: Nullable(Type.String()),
  email: Nullable(Type.String()),
  company: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  source: Nullable(Type.String()),
  external_id: Nullable(Type.String()),
  custom: Type.Record(Type.String(), Type.String()),
  created_at: Timestamp,
  deleted_at: Type.Optional(
    Type.String({ description: 'When the synced source (RingCentral) said the contact was removed' }),
  ),
});

export const ListContactsResponse = Type.Object({
  contacts: Type.Array(ContactRecord),
  next_cursor: Type.String({ description: '"" on the last page' }),
});
