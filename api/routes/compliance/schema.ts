import { Type } from '@sinclair/typebox';
import {
  MAX_DNC_CSV_CHARS,
  MAX_DNC_PHONES,
  MAX_LISTED_INVALID,
} from '../../../core/domain/compliance/dnc-input.js';
import { Body, Cursor, FirmSlug, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

const Reason = Type.String({ minLength: 1, maxLength: 500, description: 'Why the number is listed' });
const DefaultCountry = Type.Optional(
  Type.String({
    pattern: '^[A-Za-z]{2}$',
    description: 'ISO 3166-1 alpha-2 country of numbers written without a country code; default US',
  }),
);

export const AddDncBody = Body({
  firmSlug: FirmSlug,
  phones: Type.Array(Type.String({ maxLength: 64 }), {
    minItems: 1,
    description: `1 to ${MAX_DNC_PHONES.toLocaleString('en-US')} numbers (more: 413 too_many_rows, nothing added), each in E.164 or any common writing (national numbers read in defaultCountry) of a valid number or of any number create-outbound-call takes; stored in E.164. Any other value is reported, the others are added`,
  }),
  reason: Type.Optional(Reason),
  source: Type.Optional(
    Type.Union([Type.Literal('api'), Type.Literal('csv')], {
      description: 'Where the firm got the numbers: api (default) or csv',
    }),
  ),
  defaultCountry: DefaultCountry,
});

export const ImportDncBody = Body({
  firmSlug: FirmSlug,
  csv: Type.String({
    minLength: 1,
    maxLength: MAX_DNC_CSV_CHARS,
    description: `CSV text, one number a row: the column headed phone (or "phone number", number, telephone, mobile, cell) when the first row is a header, else the first column; at most ${MAX_DNC_PHONES.toLocaleString('en-US')} rows (more: 413 too_many_rows, nothing added)`,
  }),
  reason: Type.Optional(Reason),
  defaultCountry: DefaultCountry,
});

const Counts = {
  added: Type.Integer({ minimum: 0, description: 'Numbers this request put on the list' }),
  already_listed: Type.Integer({
    minimum: 0,
    description: 'Numbers on the list already (or given twice in this request)',
  }),
  invalid: Type.Integer({ minimum: 0, description: 'Values that are not a valid phone number' }),
};

const Invalid = (at: 'index' | 'line', description: string) =>
  Type.Array(
    Type.Object({
      [at]: Type.Integer({ minimum: 0, description }),
      value: Type.String({ description: 'The value as given (at most 100 characters)' }),
      reason: Type.String(),
    }),
    { maxItems: MAX_LISTED_INVALID, description: `The first ${MAX_LISTED_INVALID} invalid values` },
  );

export const AddDncResponse = Type.Object(
  { ...Counts, invalid_phones: Invalid('index', 'Position in phones, from 0') },
  { description: 'added + already_listed + invalid = the number of phones given' },
);

export const ImportDncResponse = Type.Object(
  {
    rows: Type.Integer({ minimum: 0, description: 'Rows read (the header and blank lines aside)' }),
    ...Counts,
    invalid_rows: Invalid('line', 'Line of the CSV, from 1'),
  },
  { description: 'added + already_listed + invalid = rows' },
);

export const ListDncQuery = Type.Object({
  firmSlug: ListFirmSlug,
  limit: Limit(1000, 100),
  cursor: Cursor(),
});

export const DncEntryRecord = Type.Object({
  phone: Type.String({ description: 'E.164' }),
  firm: Type.String(),
  source: Type.Union(
    ['api', 'csv', 'call', 'chat', 'widget'].map((s) => Type.Literal(s)),
    { description: 'api, csv: the firm; call, chat, widget: the person opted out there' },
  ),
  reason: Type.Union([Type.String(), Type.Null()]),
  evidence: Type.Union(
    [
      Type.Object({
        call_id: Type.Optional(Type.String()),
        chat_id: Type.Optional(Type.String()),
        words: Type.Optional(Type.String({ description: 'What the person said or wrote' })),
      }),
      Type.Null(),
    ],
    { description: 'For an opt-out: the call or chat and the words' },
  ),
  added_at: Timestamp,
  added_by: Type.String({
    description: 'platform, api_key:<id>, session:<subject>, or opt_out (the person themselves)',
  }),
});

export const ListDncResponse = Type.Object({
  entries: Type.Array(DncEntryRecord, { description: "The firm's numbers in E.164 text order" }),
  next_cursor: Type.String({ description: '"" on the last page' }),
});

export const DncPhoneParams = Type.Object({
  phone: Type.String({ minLength: 1, maxLength: 64, description: 'E.164 (a leading + may be sent as %2B)' }),
});

export const RemoveDncQuery = Type.Object({
  firmSlug: ListFirmSlug,
  reason: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description:
        "Why the number is removed, kept with the removal: required to remove the person's own opt-out (added_by opt_out: only the person can take it back; say how they did), optional otherwise",
    }),
  ),
  defaultCountry: DefaultCountry,
});

export const RemoveDncResponse = Type.Object({
  phone: Type.String(),
  firm: Type.String(),
  removed: Type.Literal(true),
  removal_id: Type.String({ description: 'The record of this removal, kept for good' }),
  removed_at: Timestamp,
  removed_by: Type.String(),
  authority: Type.Union([Type.Literal('platform'), Type.Literal('firm_request')]),
  reason: Type.Union([Type.String(), Type.Null()]),
});
