// The built-in chat intake agent books a consultation (docs/appointments.md#the-chat-agent), in
// the widget on a firm's own site in headless Chromium: after its questions it proposes the next
// free slots of the firm's Cal.com (the local one, test/fakes/calcom-server.ts), the person picks
// one by number, and it is booked; end-chat's lead carries it, and Cal.com's BOOKING_CREATED makes
// exactly one set of reminders.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_STEP_MS, BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { remindersWhen } from '../bookings/support.js';
import { createWidgetKey } from './widget-key-helpers.js';
import {
  openSite,
  seenOnWire,
  snippetOf,
  startFirmSite,
  statusText,
  type FirmSite,
} from './embed-helpers.js';

declare const document: any;

const API_KEY = 'cal_live_widget_key_0123456789';
const EVENT_TYPE = 91;
const BOOKING_SECRET = 'whsec_widget_booking_secret';
const DAY = 24 * 3600_000;

let stack: Stack;
let browser: Browser;
let site: FirmSite;
let cal: FakeCalcom;
let firm: Awaited<ReturnType<typeof createFirm>>;
const slots = dailySlots(Date.now() + DAY, 5, 3);

beforeAll(async () => {
  stack = await startStack({ workers: true });
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots });
  firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    booking_webhook_secret: BOOKING_SECRET,
    timezone: 'America/Denver',
  });
  cal.setWebhook({ url: `${stack.baseUrl}/api/v2/${firm.slug}/booking-webhook`, secret: BOOKING_SECRET });
  await createAgent(firm.client, firm.slug);
  site = await startFirmSite(stack.baseUrl);
  // A widget chat books only behind a proof of work (docs/widget.md#bookings): the widget solves it.
  const key = await createWidgetKey(firm.client, firm.slug, {
    allowed_origins: [site.origin],
    challenge: 'altcha',
  });
  site.setBody(await snippetOf(firm.client, key.id, '?title=Intake'));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await site?.stop();
  await cal?.stop();
  await stack?.stop();
});

const agentMessages = (page: any): Promise<string[]> =>
  page.evaluate(() =>
    [...(document.querySelector('intake-widget')?.shadowRoot?.querySelectorAll('.iw-msg-agent') ?? [])].map(
      (m: any) => m.lastChild?.textContent ?? '',
    ),
  );

/** Sends a message and waits for the agent's answer to it. */
async function say(page: any, message: string): Promise<string> {
  const before = (await agentMessages(page)).length;
  await page.getByRole('textbox', { name: 'Message' }).fill(message);
  await page.keyboard.press('Enter');
  await expect
    .poll(async () => (await agentMessages(page)).length, { timeout: BROWSER_STEP_MS })
    .toBeGreaterThan(before);
  return (await agentMessages(page)).at(-1)!;
}

describe('the chat agent in the widget books a consultation', { timeout: BROWSER_TEST_MS }, () => {
  it('proposes free slots after the questions, books the one picked, and the lead carries it', async () => {
    const { context, page, problems, wire } = await openSite(browser, `${site.origin}/`);
    try {
      await page.getByRole('button', { name: 'Open chat: Intake' }).click();
      // The chat's greeting ends with the first intake question.
      // (After the widget has solved its ALTCHA: seconds on a loaded machine.)
      await expect
        .poll(async () => (await agentMessages(page)).at(-1) ?? '', { timeout: BROWSER_STEP_MS })
        .toContain('full name');
      const answers = [
        'Jane Doe',
        '+1 415 555 0134',
        'jane.doe@example.com',
        'car accident',
        'I was rear-ended at a light.',
      ];
      let offer = '';
      for (const message of answers) offer = await say(page, message);
      expect(offer).toContain('Would you like a free consultation?');
      // The first free slot, in the firm's time zone, as a person says it.
      expect(offer).toContain('(America/Denver)');
      expect(offer).toMatch(/1\) [A-Z][a-z]+day, [A-Z][a-z]+ \d{1,2} at \d{1,2}:\d{2} [AP]M/);
      expect(cal.bookings).toHaveLength(0);

      const confirmation = await say(page, '2 please');
      expect(confirmation).toMatch(/^Your consultation is booked for /);
      expect(cal.bookings).toHaveLength(1);
      const booking = cal.bookings[0]!;
      expect(booking).toMatchObject({
        start: new Date(slots[1]!).toISOString(),
        attendee: { name: 'Jane Doe', email: 'jane.doe@example.com', timeZone: 'America/Denver' },
      });
      expect(confirmation).toContain('jane.doe@example.com');
      await seenOnWire(wire, `200 POST ${stack.baseUrl}/api/v2/chat-completion`);

      const ended = page.waitForResponse((r) => r.url().endsWith('/api/v2/end-chat'));
      await page.getByRole('button', { name: 'End chat' }).click();
      expect((await ended).status()).toBe(200);
      expect(await statusText(page)).toMatch(/^Thank you\. This conversation has ended/);
      // The one refusal is the session asked first without a solution (docs/widget.md#altcha).
      expect(problems).toEqual([
        'console error: Failed to load resource: the server responded with a status of 400 (Bad Request)',
      ]);

      const leads = await firm.client.get(`/api/leads?firmSlug=${firm.slug}`);
      expect(leads.body.leads).toHaveLength(1);
      expect(leads.body.leads[0]).toMatchObject({
        source: 'chat',
        email: 'jane.doe@example.com',
        appointment: { booking_uid: booking.uid, start: booking.start, status: 'booked' },
      });

      await cal.settled();
      expect(cal.deliveries).toEqual([{ trigger: 'BOOKING_CREATED', uid: booking.uid, status: 200 }]);
      await remindersWhen(firm.client, firm.slug, booking.uid, (rows) => {
        expect(rows.map((r) => [r.to, Date.parse(r.due_at)])).toEqual([
          ['jane.doe@example.com', slots[1]! - DAY],
          ['jane.doe@example.com', slots[1]! - 3600_000],
        ]);
      });
    } finally {
      await context.close();
    }
  });
});
