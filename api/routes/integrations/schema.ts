import { Type } from '@sinclair/typebox';
import { FirmSlug } from '../../schemas/common.js';

// The Clio OAuth routes' queries (docs/clio.md#connected-with-oauth).
export const ClioConnectQuery = Type.Object({
  firmSlug: FirmSlug,
  region: Type.Optional(
    Type.Union([Type.Literal('us'), Type.Literal('eu'), Type.Literal('ca'), Type.Literal('au')], {
      description: "The firm's Clio region: us (app.clio.com, default), eu, ca, au",
    }),
  ),
});

/** What Clio sends back: ?code=&state= on approval, ?error=&error_description= when refused. */
export const ClioCallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  state: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
});

/** The confirmation page's forms post to ?confirmation=&decision= with no body. */
export const ClioConfirmQuery = Type.Object({
  confirmation: Type.String({
    pattern: '^[A-Za-z0-9_-]{43}$',
    description: 'The id the confirmation page carries',
  }),
  decision: Type.Union([Type.Literal('connect'), Type.Literal('cancel')]),
});
