// Anonymous bookings from the widget: a visitor booked 30 real appointments in 13.6 s with any
// email (Cal.com mailed those addresses; two reminder mails were queued for each). A widget chat
// now books only when its key asks for an ALTCHA proof of work (the visitor solved one before the
// chat, and so before the booking step: a key without one offers no times, the firm calls back),
// at most once per visitor address per UTC day (all its chats and sessions together), and at most
// `widget_daily_booking_cap` times per firm per UTC day (default WIDGET_DAILY_BOOKING_CAP). One
// booking per chat was already so. Behind TRUST_PROXY each visitor plays its own address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, INTAKE_ANSWERS } from '../chat/chat-helpers.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { askSession, createWidgetKey, solvedNumber } from './widget-key-helpers.js';

const SITE = 'https://firm.example';
const API_KEY = 'cal_live_widget_booking_limits_0123';
const EVENT_TYPE = 5151;
const DAY = 86_400_000;

let stack: Stack;
/** One Cal.com per firm: each firm's visitors pick from its own free times. */
const cals: FakeCalcom[] = [];

beforeAll(async () => {
  stack = await startStack({
    env: { TRUST_PROXY: 'true', WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: '100', WIDGET_DAILY_BOOKING_CAP: '3' },
  });
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all(cals.map((c) => c.stop()));
});

/** What an ALTCHA widget sends for a challenge of `key` (solved as a browser would). */
async function solvedAltcha(key: string, headers: Record<string, string>): Promise<string> {
  const res = await stack.api.get(`/api/widget/challenge?key=${encodeURIComponent(key)}`, headers);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const c = res.body;
  const found = solvedNumber(c);
  expect(found, 'the challenge has a solution').not.toBeNull();
  const payload = {
    algorithm: c.algorithm,
    challenge: c.challenge,
    number: found!,
    salt: c.salt,
    signature: c.signature,
  };
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

async function bookingFirm(settings: Record<string, unknown> = {}) {
  const cal = await startFakeCalcom({
    apiKey: API_KEY,
    eventTypeId: EVENT_TYPE,
    slots: dailySlots(Date.now() + DAY, 5, 12),
  });
  cals.push(cal);
  const firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    ...settings,
  });
  const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
  const withAltcha = await createWidgetKey(firm.client, firm.slug, {
    agent_id: agentId,
    challenge: 'altcha',
  });
  const plain = await createWidgetKey(firm.client, firm.slug, { agent_id: agentId });
  /** A visitor from `address` chatting through a key: answers the questions, then says `pick`. */
  const visit = async (address: string, key: 'altcha' | 'plain', pick = '1') => {
    const headers = { 'X-Forwarded-For': address, Origin: SITE };
    const k = key === 'altcha' ? withAltcha : plain;
    const body =
      key === 'altcha' ? { key: k.key, altcha: await solvedAltcha(k.key, headers) } : { key: k.key };
    const session = await askSession(stack.api, SITE, body, headers);
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    const client: ApiClient = stack.api.withToken(session.body.token);
    const chat = await client.post('/api/v2/create-chat', { firmSlug: firm.slug, agentId }, headers);
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    const say = async (message: string) => {
      const res = await client.post(
        '/api/v2/chat-completion',
        { chatId: chat.body.chat_id, message },
        headers,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.message as string;
    };
    let offer = '';
    for (const answer of INTAKE_ANSWERS) offer = await say(answer);
    return { offer, picked: await say(pick), say };
  };
  return { firm, cal, visit };
}

const BOOKED = /^Your consultation is booked for /;
/** Each visitor chats through six turns; longer than a plain test's limit on a loaded machine. */
const SLOW = 180_000;

describe('bookings from widget chats', () => {
  it('a key without an ALTCHA challenge offers no times and books nothing: the firm calls back', async () => {
    const { cal, visit } = await bookingFirm();
    const before = cal.bookings.length;
    const { offer, picked } = await visit('198.51.100.10', 'plain');
    expect(offer).not.toContain('Would you like a free consultation?');
    expect(picked).not.toMatch(BOOKED);
    expect(cal.bookings.length).toBe(before);
  });

  it(
    'one booking per visitor address per day: a second chat from the same address books nothing',
    async () => {
      const { cal, visit } = await bookingFirm();
      const before = cal.bookings.length;
      const first = await visit('198.51.100.20', 'altcha');
      expect(first.offer).toContain('Would you like a free consultation?');
      expect(first.picked).toMatch(BOOKED);
      const second = await visit('198.51.100.20', 'altcha', '2');
      expect(second.picked).not.toMatch(BOOKED);
      expect(second.picked).toMatch(/already booked a consultation today/);
      expect(cal.bookings.length).toBe(before + 1);
      // The first chat may still move its own booking (one per chat, as in a call).
      // The first chat keeps its booking: asked again, it is not refused.
      expect(await first.say('1')).not.toMatch(/already booked a consultation today/);
      // Another visitor is not affected.
      expect((await visit('198.51.100.21', 'altcha', '2')).picked).toMatch(BOOKED);
    },
    SLOW,
  );

  it(
    "a firm's widget books at most its daily cap (a setting; the platform's default else); a firm may lower it, not raise it",
    async () => {
      const { firm, cal, visit } = await bookingFirm({ widget_daily_booking_cap: 2 });
      const before = cal.bookings.length;
      expect((await visit('198.51.100.30', 'altcha')).picked).toMatch(BOOKED);
      expect((await visit('198.51.100.31', 'altcha', '2')).picked).toMatch(BOOKED);
      const third = await visit('198.51.100.32', 'altcha', '3');
      expect(third.picked).not.toMatch(BOOKED);
      expect(third.picked).toMatch(/takes no more online bookings today/);
      expect(cal.bookings.length).toBe(before + 2);

      expectError(
        await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { widget_daily_booking_cap: 50 } }),
        403,
        'forbidden',
      );
      expect(
        (await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { widget_daily_booking_cap: 1 } }))
          .status,
      ).toBe(200);
    },
    SLOW,
  );
});
