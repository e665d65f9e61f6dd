import { Type, type TOptional, type TSchema } from '@sinclair/typebox';
import { FIRM_SLUG_PATTERN } from '../../core/domain/firms/firm-slug.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../core/platform/db/idempotency.js';

export const FirmSlug = Type.String({ pattern: FIRM_SLUG_PATTERN, maxLength: 63, description: 'Firm slug' });
export const Id = Type.String({ minLength: 1, maxLength: 128 });
export const Timestamp = Type.String({ format: 'date-time' });

/**
 * The firm a list is for (GET lists, POST list-calls aside): a firm token may leave it out (its
 * own firm); the platform key must give it, else 400 (core/domain/access/access.ts requireListFirm).
 */
export const ListFirmSlug = Type.Optional(
  Type.String({
    pattern: FirmSlug.pattern,
    maxLength: FirmSlug.maxLength,
    description:
      'The firm; a firm token may leave it out (its own firm), the platform key must give it (else 400)',
  }),
);

/** Marks a field whose schema `default` ajv fills in (useDefaults: api/validation.ts). */
export const DefaultedKind: unique symbol = Symbol('Defaulted');

/** A field the client may leave out; the handler always sees a value (api/route.ts `Received`). */
export type TDefaulted<T extends TSchema> = TOptional<T> & { [DefaultedKind]: true };

/** Optional for the client, with its `default` applied by the validator: the default is written once, here. */
export function Defaulted<T extends TSchema>(schema: T): TDefaulted<T> {
  if (schema.default === undefined) throw new Error('Defaulted() needs a schema with a default.');
  // A symbol key, as TypeBox marks its own kinds: it never reaches the OpenAPI document.
  const optional = Type.Optional(schema) as TOptional<T>; // what Type.Optional makes of a plain T
  return Object.assign(optional, { [DefaultedKind]: true as const });
}

/** A page size: 1 to `maximum`, `fallback` when left out. */
export const Limit = (maximum: number, fallback: number, description?: string) =>
  Defaulted(
    Type.Integer({
      minimum: 1,
      maximum,
      default: fallback,
      ...(description === undefined ? {} : { description }),
    }),
  );

/** A request body: unknown top-level fields are a 400, so a typo is reported rather than ignored. */
export const Body = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object(properties, { additionalProperties: false });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    }),
  },
  { $id: 'Error' },
);

/**
 * Variables for an agent's prompt ({{name}} placeholders) on calls and chats: at most 50 keys
 * named like identifiers; values strings, numbers or booleans, stored and sent as strings.
 */
export const DynamicVariables = Type.Record(
  Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' }),
  Type.Union([Type.String({ maxLength: 5000 }), Type.Number(), Type.Boolean()]),
  {
    maxProperties: 50,
    additionalProperties: false,
    description: 'Variables for the agent prompt: at most 50, stored and sent as strings',
  },
);

/** A keyset page's cursor (core/platform/db/keyset-cursor.ts): opaque, bound to its list and firm. */
export const Cursor = (from = 'next_cursor of the previous page') =>
  Type.Optional(
    // No maxLength here: a cursor too long to be one of ours is 400 invalid_cursor, as any other
    // cursor not issued for the list (decodeCursor), not a schema's invalid_request.
    Type.String({
      description: `${from}; "" or absent for the first. A cursor this service did not issue for this list and firm is 400 invalid_cursor`,
    }),
  );

/** The optional Idempotency-Key request header (core/platform/db/idempotency.ts), as the OpenAPI document shows it. */
export const IdempotencyKeyHeader = {
  'Idempotency-Key': {
    description:
      'A repeat with the same key and firm within 24 h answers what the first request got (Idempotent-Replayed: true) and does nothing again; 1-255 printable ASCII characters without spaces',
    schema: Type.String({ minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN }),
  },
};
