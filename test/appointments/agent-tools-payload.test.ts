// Retell custom functions in both payload modes (Retell's custom-function doc; retell-sdk's
// CustomTool.args_at_root): the default body `{name, call, args}`, and "Payload: args only",
// where the body is the args alone and the call is identified only by what the tool is
// configured to send with it: a `call_id` query parameter (`?call_id={{call_id}}`) or an
// `X-Retell-Call-Id: {{call_id}}` header, `{{call_id}}` being Retell's system dynamic variable.
// A request that does not say which call it is from is answered 200 with words for the agent
// (a 4xx is silence on the line), and the misconfiguration is logged once per firm.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RETELL_SIGNATURE_HEADER,
  signRetellWebhook,
} from '../../core/integrations/voice/webhook-signature.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { customFunctionRequest, ongoingCall } from '../fakes/retell-fixtures.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';

const API_KEY = 'cal_live_payload_key_0123456789';
const EVENT_TYPE = 4343;
const VOICE_SECRET = 'voice_secret_for_payload_modes';

let stack: Stack;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
const slots = dailySlots(Date.now(), 10, 4);

beforeAll(async () => {
  stack = await startStack();
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    voice_webhook_secret: VOICE_SECRET,
    timezone: 'America/New_York',
  });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

/** POSTs `body` to the tool as Retell does: signed over the raw body, with the tool's query and headers. */
function send(
  name: string,
  body: unknown,
  options: { query?: string; headers?: Record<string, string>; slug?: string } = {},
) {
  const raw = JSON.stringify(body);
  const path = `/api/v2/${options.slug ?? firm.slug}/tools/${name}${options.query ?? ''}`;
  return stack.api.request('POST', path, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      [RETELL_SIGNATURE_HEADER]: signRetellWebhook(raw, VOICE_SECRET),
      ...options.headers,
    },
  });
}

const notices = () => stack.services.mongo.db.collection(COLLECTIONS.toolCallNotices);

describe('"Payload: args only"', () => {
  it('with ?call_id= in the function URL, check_availability answers slots and book_appointment books once per call', async () => {
    const callId = 'call_args_only_query_1';
    const check = await send('check_availability', {}, { query: `?call_id=${callId}` });
    expect(check.status, JSON.stringify(check.body)).toBe(200);
    expect(check.body.slots.length).toBeGreaterThan(0);
    const pick = check.body.slots[0].start as string;
    const args = { start: pick, name: 'Ada Args', email: 'ada.args@example.com' };
    const booked = await send('book_appointment', args, { query: `?call_id=${callId}` });
    expect(booked.status, JSON.stringify(booked.body)).toBe(200);
    expect(booked.body.booked).toBe(true);
    // Retell retries a request that failed; the same call's retry books nothing more, and the
    // same call in the default payload mode is the same booking.
    const again = await send('book_appointment', args, { query: `?call_id=${callId}` });
    expect(again.body.booking_uid).toBe(booked.body.booking_uid);
    const wrapped = await send(
      'book_appointment',
      customFunctionRequest('book_appointment', ongoingCall({ callId }), args),
    );
    expect(wrapped.body.booking_uid).toBe(booked.body.booking_uid);
    expect(cal.bookings.filter((b) => b.attendee.email === 'ada.args@example.com')).toHaveLength(1);
  });

  it('with an X-Retell-Call-Id header the call is identified too', async () => {
    const check = await send(
      'check_availability',
      { date: new Date(slots[8]!).toISOString().slice(0, 10) },
      {
        headers: { 'X-Retell-Call-Id': 'call_args_only_header_1' },
      },
    );
    expect(check.status, JSON.stringify(check.body)).toBe(200);
    expect(check.body.slots.length).toBeGreaterThan(0);
    expect(check.body.time_zone).toBe('America/New_York');
  });

  it('a request that does not say which call it is from answers 200 with words to say, books nothing, and is logged once per firm', async () => {
    const other = await createFirm(stack, {
      booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
      voice_webhook_secret: VOICE_SECRET,
    });
    const before = cal.bookings.length;
    const args = {
      start: new Date(slots[12]!).toISOString(),
      name: 'Nemo Nobody',
      email: 'nemo@example.com',
    };
    // No call id at all; then Retell's unresolved template, as it leaves a variable it cannot fill.
    const bare = await send('book_appointment', args, { slug: other.slug });
    const template = await send('book_appointment', args, {
      slug: other.slug,
      query: '?call_id={{call_id}}',
    });
    const check = await send('check_availability', {}, { slug: other.slug });
    for (const res of [bare, template]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ booked: false, message: expect.stringMatching(/will call them back/) });
    }
    expect(check.status).toBe(200);
    expect(check.body).toEqual({ slots: [], message: expect.stringMatching(/will call them back/) });
    expect(cal.bookings.length).toBe(before);
    const logged = await notices()
      .find({ _id: other.slug as never })
      .toArray();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ tool: 'book_appointment' });
  });

  it('the default payload without a call_id is the same soft answer, never a 400', async () => {
    const res = await send('check_availability', { name: 'check_availability', call: {}, args: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ slots: [], message: expect.stringMatching(/will call them back/) });
  });
});
