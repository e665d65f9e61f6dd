import { Type } from '@sinclair/typebox';
import { E164_PATTERN } from '../../../core/domain/firms/firm-settings.js';
import { Cursor, Defaulted, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

const Filter = {
  firmSlug: ListFirmSlug,
  phone: Type.Optional(Type.String({ pattern: E164_PATTERN, description: 'Only this number (E.164)' })),
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Decisions at or after (ISO 8601)' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Decisions before (ISO 8601)' })),
};

export const ListDecisionsQuery = Type.Object({
  ...Filter,
  limit: Limit(1000, 100),
  cursor: Cursor(),
});

export const ExportDecisionsQuery = Type.Object({
  ...Filter,
  format: Defaulted(
    Type.Union([Type.Literal('ndjson'), Type.Literal('csv')], {
      default: 'ndjson',
      description: 'ndjson (one decision per line) or csv (a header row, then one decision per row)',
    }),
  ),
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const DecisionRecord = Type.Object({
  id: Type.String(),
  firm: Type.String(),
  phone: Type.String(),
  call_id: Type.String(),
  campaign_id: Nullable(Type.String()),
  stage: Type.Union([Type.Literal('request'), Type.Literal('dial')]),
  answer: Type.Union([Type.Literal('allow'), Type.Literal('defer'), Type.Literal('block')]),
  reason: Nullable(Type.String()),
  message: Nullable(Type.String()),
  retry_at: Nullable(Timestamp),
  rules_version: Type.String(),
  region: Nullable(Type.String()),
  limited_by: Type.Array(Type.String()),
  zones: Type.Array(Type.Object({ zone: Type.String(), local: Type.String(), allowed: Type.Boolean() })),
  attempts: Nullable(Type.Integer()),
  attempts_cap: Type.Integer(),
  consent: Nullable(
    Type.Object(
      {
        purpose: Type.Union([Type.Literal('marketing'), Type.Literal('informational')]),
        kind: Nullable(Type.String({ description: "The lead's consent kind; null: none" })),
        obtained_at: Nullable(Timestamp),
        skip: Nullable(
          Type.String({
            description:
              'Why the consent did not suffice: no_consent, consent_expired, consent_not_for_marketing',
          }),
        ),
      },
      {
        description:
          "A campaign call's consent as judged; null when no consent rule applied (a direct call, the dial stage)",
      },
    ),
  ),
  at: Timestamp,
});

export const ListDecisionsResponse = Type.Object({
  decisions: Type.Array(DecisionRecord),
  next_cursor: Type.String(),
});
