import { Type } from '@sinclair/typebox';
import { MAX_ALLOWED_ORIGINS } from '../../../core/domain/widget/widget-keys.js';
import { ORIGIN_PATTERN } from '../../../core/platform/origins.js';
import { Body, Cursor, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

// /api/widget-keys (docs/widget.md#widget-keys): a firm's publishable widget keys.

const Name = Type.String({ minLength: 1, maxLength: 200 });
const AgentId = Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$' });
const Challenge = Type.Literal('altcha', {
  description: 'A session must bring a solved ALTCHA proof of work (GET /api/widget/challenge)',
});

const AllowedOrigins = Type.Array(Type.String({ maxLength: 300, pattern: ORIGIN_PATTERN }), {
  minItems: 1,
  maxItems: MAX_ALLOWED_ORIGINS,
  uniqueItems: true,
  description:
    'The exact origins (scheme://host[:port], as a browser sends its Origin header) whose pages may use the key',
});

export const CreateWidgetKeyBody = Body({
  firmSlug: FirmSlug,
  name: Name,
  allowed_origins: AllowedOrigins,
  agent_id: Type.Optional(
    Type.Union([AgentId, Type.Null()], {
      description: "The agent a session chats with when it names none (default: the firm's newest)",
    }),
  ),
  challenge: Type.Optional(Type.Union([Challenge, Type.Null()])),
});

export const PatchWidgetKeyBody = Body({
  name: Type.Optional(Name),
  allowed_origins: Type.Optional(AllowedOrigins),
  agent_id: Type.Optional(
    Type.Union([AgentId, Type.Null()], { description: 'null: the firm’s newest agent' }),
  ),
  challenge: Type.Optional(Type.Union([Challenge, Type.Null()], { description: 'null: no challenge' })),
});

export const WidgetKeyParams = Type.Object({ id: Id });

export const ListWidgetKeysQuery = Type.Object({
  firmSlug: ListFirmSlug,
  limit: Limit(200, 50),
  cursor: Cursor(),
});

export const WidgetKeyResponse = Type.Object({
  id: Type.String(),
  firmSlug: Type.String(),
  name: Type.String(),
  key: Type.String({
    description:
      'The publishable key (iwpk_…): no secret, it goes into the embed snippet on the firm’s pages',
  }),
  allowed_origins: Type.Array(Type.String()),
  agent_id: Type.Union([Type.String(), Type.Null()]),
  challenge: Type.Union([Type.Literal('altcha'), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const ListWidgetKeysResponse = Type.Object({
  widget_keys: Type.Array(WidgetKeyResponse),
  next_cursor: Type.String({ description: '"" on the last page; else send it back as ?cursor=' }),
});
