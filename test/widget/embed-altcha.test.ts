// A widget key with challenge "altcha" on a firm's website (docs/widget.md#altcha), in
// headless Chromium on a second origin: the widget fetches the challenge, solves it in the page
// (crypto.subtle, no outside script) and gets its token; the session is refused without a
// solution, and the same solution replayed is refused.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';
import { openSite, snippetOf, startFirmSite, waitForMessage, type FirmSite } from './embed-helpers.js';

const FIRST_QUESTION = `Hello, thank you for contacting us. I can help you get started. ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`;

let stack: Stack;
let browser: Browser;
let site: FirmSite;
let firm: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
  await createAgent(firm.client, firm.slug);
  site = await startFirmSite(stack.baseUrl);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await site?.stop();
  await stack?.stop();
});

describe('a key with challenge "altcha"', { timeout: BROWSER_TEST_MS }, () => {
  it('the widget solves the proof of work and gets its token; without a solution, or replayed, none', async () => {
    const key = await createWidgetKey(firm.client, firm.slug, {
      allowed_origins: [site.origin],
      challenge: 'altcha',
    });
    site.setBody(await snippetOf(firm.client, key.id));

    const opened = await openSite(browser, `${site.origin}/`);
    let solved: string;
    try {
      const granted = opened.page.waitForResponse(
        (r) => r.url().endsWith('/api/widget/session') && r.status() === 200,
      );
      await opened.page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      solved = ((await granted).request().postDataJSON() as { altcha: string }).altcha;
      await waitForMessage(opened.page, 'agent', FIRST_QUESTION);
      // Asked without a solution (400 altcha_required, readable: the key allows this origin), then
      // the challenge, then with the solution found in the page.
      const session = `${stack.baseUrl}/api/widget/session`;
      expect(opened.network.filter((l) => l.includes('/api/widget/'))).toEqual([
        `400 POST ${session}`,
        expect.stringMatching(new RegExp(`^200 GET ${stack.baseUrl}/api/widget/challenge\\?key=iwpk_`)),
        `200 POST ${session}`,
      ]);
      // The one refusal is all the console shows: no CSP violation, no failed request.
      expect(opened.problems).toEqual([
        'console error: Failed to load resource: the server responded with a status of 400 (Bad Request)',
      ]);
    } finally {
      await opened.context.close();
    }

    const payload = JSON.parse(Buffer.from(solved, 'base64').toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual([
      'algorithm',
      'challenge',
      'number',
      'salt',
      'signature',
      'took',
    ]);
    expectError(await askSession(stack.api, site.origin, { key: key.key }), 400, 'altcha_required');
    expectError(
      await askSession(stack.api, site.origin, { key: key.key, altcha: solved }),
      409,
      'altcha_replayed',
    );
  });
});
