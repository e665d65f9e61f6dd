// The widget says when a limit is hit (docs/widget.md#embed): on a firm site in headless
// Chromium, the session past WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR is answered 429 with CORS
// headers, so the widget reads it and tells the visitor when to try again.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { createWidgetKey } from './widget-key-helpers.js';
import { openSite, snippetOf, startFirmSite, statusText, type FirmSite } from './embed-helpers.js';
import { clearOfPeriodEdge } from '../helpers/window-edge.js';

let stack: Stack;
let browser: Browser;
let site: FirmSite;

beforeAll(async () => {
  stack = await startStack({ env: { WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: '1' } });
  const firm = await createFirm(stack);
  await createAgent(firm.client, firm.slug);
  site = await startFirmSite(stack.baseUrl);
  const key = await createWidgetKey(firm.client, firm.slug, { allowed_origins: [site.origin] });
  site.setBody(await snippetOf(firm.client, key.id));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await site?.stop();
  await stack?.stop();
});

/** Opens the site in a fresh browser, clicks the launcher, and returns the session's status. */
async function visit(): Promise<{ status: number; retryAfter: string | null; shown: string }> {
  const opened = await openSite(browser, `${site.origin}/`);
  try {
    const session = opened.page.waitForResponse((r) => r.url().endsWith('/api/widget/session'));
    await opened.page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
    const answer = await session;
    const shown = answer.status() === 200 ? '' : await statusText(opened.page);
    return { status: answer.status(), retryAfter: await answer.headerValue('retry-after'), shown };
  } finally {
    await opened.context.close();
  }
}

describe('limits, as the visitor sees them', { timeout: BROWSER_TEST_MS }, () => {
  it('the second session from this address within the hour: 429, and the widget says when to try again', async () => {
    await clearOfPeriodEdge(3_600_000);
    expect((await visit()).status).toBe(200);
    const refused = await visit();
    expect(refused.status).toBe(429);
    const seconds = Number(refused.retryAfter);
    expect(seconds).toBeGreaterThan(0);
    expect(refused.shown).toMatch(
      new RegExp(
        `^Too many requests right now\\. Please try again in ${Math.max(1, Math.ceil(seconds / 60))} min\\.`,
      ),
    );
  });
});
