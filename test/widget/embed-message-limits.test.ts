// The message limits as a visitor meets them on a firm site (docs/widget.md#limits), in
// headless Chromium on a second origin: the firm's daily widget message cap and the messages one
// chat takes, each answered 429 with CORS headers, so the widget reads it and says so. (The count
// itself, over HTTP: test/widget/widget-limits.test.ts and test/hardening/chat-length-limit.test.ts.)
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHAT_MESSAGES } from '../../core/domain/chats/chat-limits.js';
import { BROWSER_STEP_MS, BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, say } from '../chat/chat-helpers.js';
import { createWidgetKey } from './widget-key-helpers.js';
import {
  openSite,
  seenOnWire,
  snippetOf,
  startFirmSite,
  statusText,
  widgetPart,
  type FirmSite,
} from './embed-helpers.js';
import { clearOfPeriodEdge } from '../helpers/window-edge.js';

let stack: Stack;
let browser: Browser;
const sites: FirmSite[] = [];

beforeAll(async () => {
  stack = await startStack({
    // A chat's 100 messages sent within a minute, faster than a visitor types: past the per-session
    // and per-address request limits (test/hardening/widget-visitor-limits.test.ts holds those).
    env: { WIDGET_SESSION_RATE_LIMIT_PER_MINUTE: '1000', WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  for (const site of sites) await site.stop();
  await stack?.stop();
});

/** A firm (with `settings`) whose own site carries its widget key's snippet. */
async function firmSite(settings: Record<string, unknown> = {}): Promise<FirmSite> {
  const firm = await createFirm(stack, settings);
  await createAgent(firm.client, firm.slug);
  const site = await startFirmSite(stack.baseUrl);
  sites.push(site);
  const key = await createWidgetKey(firm.client, firm.slug, { allowed_origins: [site.origin] });
  site.setBody(await snippetOf(firm.client, key.id));
  return site;
}

/** Sends one message from the widget and waits for chat-completion's answer; its status. */
async function send(page: Page, text: string): Promise<number> {
  return (await sendSeen(page, text)).status;
}

/** send(), with the widget's request as sent: its token and chat. */
async function sendSeen(
  page: Page,
  text: string,
): Promise<{ status: number; authorization: string; chatId: string }> {
  const answer = page.waitForResponse(
    (r) => r.url().endsWith('/api/v2/chat-completion') && r.request().method() === 'POST',
  );
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.keyboard.press('Enter');
  // A send whose session or chat the service refused never asks chat-completion: the widget then
  // says why, and the failure says what the widget said (seen once in CI: a 60 s wait, no why).
  const response = await answer.catch(async (err: unknown) => {
    throw new Error(`no chat-completion answer to "${text}"; the widget says: "${await statusText(page)}"`, {
      cause: err,
    });
  });
  const request = response.request();
  return {
    status: response.status(),
    authorization: (await request.allHeaders())['authorization'] ?? '',
    chatId: (request.postDataJSON() as { chatId: string }).chatId,
  };
}

/** The visitor's own bubbles in the conversation. */
const sentBubbles = (page: Page) => widgetPart(page, '.iw-msg-user').count();

describe('message limits, as the visitor sees them', { timeout: BROWSER_TEST_MS }, () => {
  it("the firm's daily widget message cap: the next message is 429 and the widget says when to try again", async () => {
    await clearOfPeriodEdge(24 * 3_600_000);
    const site = await firmSite({ widget_daily_message_cap: 2 });
    const { context, page, wire } = await openSite(browser, `${site.origin}/`);
    try {
      await page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      expect(await send(page, 'Jane Doe')).toBe(200);
      expect(await send(page, '+1 415 555 0134')).toBe(200);
      expect(await send(page, 'jane.doe@example.com')).toBe(429);
      // The widget shows the refusal once it has read the answer (until then: "typing"), which a
      // loaded machine's renderer can take longer than expect.poll's default second to do.
      await expect
        .poll(() => statusText(page), { timeout: BROWSER_STEP_MS })
        .toMatch(/^Too many requests right now\. Please try again in \d+ min\./);
      await seenOnWire(wire, `429 POST ${stack.baseUrl}/api/v2/chat-completion`);
    } finally {
      await context.close();
    }
  });

  it(`messages one chat takes: ${MAX_CHAT_MESSAGES}, then 429, and the widget says so`, async () => {
    const site = await firmSite();
    const { context, page } = await openSite(browser, `${site.origin}/`);
    try {
      await page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      // The first message from the widget opens the chat; the ones up to the last allowed go
      // over HTTP with the widget's own token, into that chat (the same requests, without
      // typing each one); the last allowed one and the one beyond it from the widget again.
      const first = await sendSeen(page, 'note 1');
      expect(first.status).toBe(200);
      const token = /^Bearer (.+)$/.exec(first.authorization)?.[1];
      expect(token).toBeDefined();
      const visitor = stack.api.withToken(token!);
      for (let i = 2; i < MAX_CHAT_MESSAGES; i++) await say(visitor, first.chatId, `note ${i}`);
      expect(await send(page, `note ${MAX_CHAT_MESSAGES}`)).toBe(200);
      expect(await sentBubbles(page)).toBe(2);
      expect(await send(page, 'one more')).toBe(429);
      // The widget shows the refusal once it has read the answer (until then: "typing").
      await expect
        .poll(() => statusText(page), { timeout: BROWSER_STEP_MS })
        .toMatch(new RegExp(`^Too many requests right now\\..*limit of ${MAX_CHAT_MESSAGES} messages`));
    } finally {
      await context.close();
    }
  });
});
