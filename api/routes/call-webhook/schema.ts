import { Type } from '@sinclair/typebox';
import { FirmSlug } from '../../schemas/common.js';

/**
 * Retell's envelope. Unknown fields are accepted everywhere: providers add fields over time.
 * `call` is required for the call events; Retell's chat events (chat_started, chat_ended,
 * chat_analyzed) carry `chat` instead and are acknowledged and ignored.
 */
export const CallWebhookBody = Type.Object(
  {
    event: Type.String({ minLength: 1, maxLength: 200 }),
    call: Type.Optional(
      Type.Object(
        { call_id: Type.String({ minLength: 1, maxLength: 256, description: "The provider's call id" }) },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

export const CallWebhookParams = Type.Object({ firm: FirmSlug });

export const CallWebhookResponse = Type.Object({ received: Type.Literal(true) });
