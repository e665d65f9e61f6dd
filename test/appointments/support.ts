// What the appointment tests share: a stack whose firm books through a fake Cal.com, and a
// Retell custom-function call to the firm's tools as Retell sends it (signed, with a
// PhoneCallResponse that the retell-sdk document accepts).
import { afterAll, beforeAll } from 'vitest';
import {
  RETELL_SIGNATURE_HEADER,
  signRetellWebhook,
} from '../../core/integrations/voice/webhook-signature.js';
import { startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { customFunctionRequest, ongoingCall, type CallOptions } from '../fakes/retell-fixtures.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

export type BookingFirm = Awaited<ReturnType<typeof createFirm>>;

export interface CalcomFirmOptions {
  apiKey: string;
  eventTypeId: number;
  slots: number[];
  voiceSecret: string;
  /** Set to have the fake Cal.com deliver its booking webhooks to the firm, signed with it. */
  bookingSecret?: string;
  workers?: boolean;
  /** Runs once the stack is up, before the fake and the firm (e.g. to capture the log). */
  onStack?: (stack: Stack) => void;
}

/** A stack, a fake Cal.com and a firm booking through it, for the file's tests (filled in beforeAll). */
export function useCalcomFirm(options: CalcomFirmOptions): {
  stack: Stack;
  cal: FakeCalcom;
  firm: BookingFirm;
} {
  const ctx = {} as { stack: Stack; cal: FakeCalcom; firm: BookingFirm };
  beforeAll(async () => {
    ctx.stack = await startStack({ workers: options.workers ?? false });
    options.onStack?.(ctx.stack);
    ctx.cal = await startFakeCalcom({
      apiKey: options.apiKey,
      eventTypeId: options.eventTypeId,
      slots: options.slots,
    });
    ctx.firm = await createFirm(ctx.stack, {
      booking: {
        provider: 'calcom',
        api_key: options.apiKey,
        event_type_id: options.eventTypeId,
        base_url: ctx.cal.url,
      },
      voice_webhook_secret: options.voiceSecret,
      ...(options.bookingSecret ? { booking_webhook_secret: options.bookingSecret } : {}),
    });
    if (options.bookingSecret) {
      ctx.cal.setWebhook({
        url: `${ctx.stack.baseUrl}/api/v2/${ctx.firm.slug}/booking-webhook`,
        secret: options.bookingSecret,
      });
    }
  });
  afterAll(async () => {
    await ctx.cal?.stop();
    await ctx.stack?.stop();
  });
  return ctx;
}

/** A custom function call (`check_availability`, `book_appointment`) mid-call, signed as Retell signs it. */
export function callTool(
  stack: Stack,
  target: { slug: string; voiceSecret: string },
  name: string,
  args: Record<string, unknown>,
  call: CallOptions & { dynamicVariables?: Record<string, string> },
) {
  const raw = JSON.stringify(customFunctionRequest(name, ongoingCall(call), args));
  return stack.api.request('POST', `/api/v2/${target.slug}/tools/${name}`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      [RETELL_SIGNATURE_HEADER]: signRetellWebhook(raw, target.voiceSecret),
    },
  });
}
