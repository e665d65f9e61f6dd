import { Type } from '@sinclair/typebox';
import { FirmSlug } from '../../schemas/common.js';

/** Retell's envelope. Unknown fields are accepted everywhere: providers add fields over time. */
export const CallWebhookBody = Type.Object(
  {
    event: Type.String({ minLength: 1, maxLength: 200 }),
    call: Type.Object(
      { call_id: Type.String({ minLength: 1, maxLength: 256, description: "The provider's call id" }) },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

export const CallWebhookParams = Type.Object({ firm: FirmSlug });

export const CallWebhookResponse = Type.Object({ received: Type.Literal(true) });
