// A deleted widget key as a firm's website meets it (docs/widget.md#embed), in headless
// Chromium on a second origin: refused on the next session request to another web process.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';
import {
  openSite,
  seenOnWire,
  snippetOf,
  startFirmSite,
  statusText,
  waitForMessage,
  type FirmSite,
} from './embed-helpers.js';

const GREETING_MESSAGE = 'Hello, thank you for contacting us. I can help you get started.';
const FIRST_QUESTION = `${GREETING_MESSAGE} ${DEFAULT_INTAKE_QUESTIONS[0]!.question}`;

let stack: Stack;
let web2: Awaited<ReturnType<typeof startWebProcess>>;
let browser: Browser;
let firm: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack();
  web2 = await startWebProcess(stack.env);
  const f = await createFirm(stack);
  firm = { ...f, agentId: (await createAgent(f.client, f.slug)).agent_id };
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await web2?.stop();
  await stack?.stop();
});

describe('a deleted key', { timeout: BROWSER_TEST_MS }, () => {
  let site: FirmSite;
  afterAll(async () => site?.stop());

  it('is refused on the next session request to a second web process', async () => {
    // The firm site loads the widget from the second process, so every widget request goes there.
    site = await startFirmSite(web2.baseUrl);
    const key = await createWidgetKey(firm.client, firm.slug, { allowed_origins: [site.origin] });
    site.setBody((await snippetOf(firm.client, key.id)).replace(stack.baseUrl, web2.baseUrl));

    const before = await openSite(browser, `${site.origin}/`);
    try {
      await before.page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      await waitForMessage(before.page, 'agent', FIRST_QUESTION);
      expect(before.problems).toEqual([]);
      expect(before.network.some((l) => l === `200 POST ${web2.baseUrl}/api/widget/session`)).toBe(true);
    } finally {
      await before.context.close();
    }

    // Deleted through the first process; the second one has read the key (its cache) just now.
    expect((await firm.client.delete(`/api/widget-keys/${key.id}`)).status).toBe(200);

    const after = await openSite(browser, `${site.origin}/`);
    try {
      await after.page.getByRole('button', { name: 'Open chat: Chat with us' }).click();
      expect(await statusText(after.page)).toMatch(/the key was revoked/);
      // Refused by the second process (a refused key's answer carries no CORS headers).
      await seenOnWire(after.wire, `401 POST ${web2.baseUrl}/api/widget/session`);
      expect([...after.network, ...after.wire].filter((l) => l.includes('/api/v2/'))).toEqual([]);
    } finally {
      await after.context.close();
    }
    expectError(
      await askSession(new ApiClient(web2.baseUrl), site.origin, { key: key.key }),
      401,
      'unauthorized',
    );
  });
});
