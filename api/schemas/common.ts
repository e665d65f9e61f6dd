import { Type, type TSchema } from '@sinclair/typebox';
import { FIRM_SLUG_PATTERN } from '../../core/domain/firm-slug.js';

export const FirmSlug = Type.String({ pattern: FIRM_SLUG_PATTERN, maxLength: 63, description: 'Firm slug' });
export const Id = Type.String({ minLength: 1, maxLength: 128 });
export const Timestamp = Type.String({ format: 'date-time' });

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
