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
