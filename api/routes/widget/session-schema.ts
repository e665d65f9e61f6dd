import { Type } from '@sinclair/typebox';
import { Body, Timestamp } from '../../schemas/common.js';

// POST /api/widget/session and GET /api/widget/challenge (docs/widget.md#sessions).

const PublishableKey = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'The publishable widget key (iwpk_…)',
});

export const WidgetSessionBody = Body({
  key: PublishableKey,
  agent_id: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,128}$',
      description: "One of the key's firm's agents (default: the key's agent, else the firm's newest)",
    }),
  ),
  altcha: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        'The solved ALTCHA challenge: base64 of the JSON {algorithm, challenge, number, salt, signature}; required when the key has challenge "altcha"',
    }),
  ),
});

export const WidgetSessionResponse = Type.Object({
  token: Type.String({
    description: 'A widget token (iwt_…) for the chat routes, bound to this origin and agent',
  }),
  expires_at: Timestamp,
  agent: Type.Object({ agent_id: Type.String(), agent_name: Type.String() }),
  settings: Type.Object({
    challenge: Type.Union([Type.Literal('altcha'), Type.Null()]),
    max_messages_per_chat: Type.Integer(),
  }),
});

export const WidgetChallengeQuery = Type.Object({ key: PublishableKey });

export const WidgetChallengeResponse = Type.Object({
  algorithm: Type.Literal('SHA-256'),
  challenge: Type.String({ description: 'SHA-256 (hex) of salt + the secret number' }),
  maxnumber: Type.Integer({ description: 'The secret number is at most this' }),
  salt: Type.String({ description: 'Carries the widget key and the expiry (5 minutes) as ?key=…&expires=…' }),
  signature: Type.String({ description: 'HMAC of the challenge: the service recognises its own' }),
});
