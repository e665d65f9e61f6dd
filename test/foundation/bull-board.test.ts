import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../jobs/queues.js';
import { BROWSER_TEST_MS, launchChromium, openContext, recordRequests } from '../helpers/browser.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const PATH = '/admin/queues';
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function expectBasicChallenge(res: Awaited<ReturnType<Stack['api']['get']>>): void {
  expectError(res, 401, 'unauthorized');
  // Two challenges (fetch joins them): the contract's Bearer, and Basic for a browser to answer.
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer, Basic realm="[^"]+"/);
}

describe('Bull Board access', () => {
  it('no credentials: 401 with a Basic challenge, so a browser asks for them', async () => {
    expectBasicChallenge(await stack.api.get(PATH));
    expectBasicChallenge(await stack.api.get(`${PATH}/api/queues`));
  });

  it('a wrong basic-auth password: 401', async () => {
    expectBasicChallenge(await stack.api.get(PATH, { Authorization: basic('ops', 'wrong-password') }));
    expectBasicChallenge(await stack.api.get(PATH, { Authorization: basic(stack.config.adminApiKey, '') }));
  });

  it('a firm API key: 403, as bearer and as basic-auth password', async () => {
    const firm = await createFirm(stack);
    expectError(await firm.client.get(PATH), 403, 'forbidden');
    expectError(await firm.client.get(`${PATH}/api/queues`), 403, 'forbidden');
    expectBasicChallenge(await stack.api.get(PATH, { Authorization: basic('ops', firm.key) }));
  });

  it('a bad bearer token: 401', async () => {
    expectError(await stack.api.withToken('garbage').get(PATH), 401, 'unauthorized');
  });

  it('the platform key as bearer, or as basic-auth password with any user name: 200', async () => {
    const asBearer = await stack.admin.get(`${PATH}/api/queues`);
    expect(asBearer.status).toBe(200);
    expect(asBearer.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
    const page = await stack.api.get(PATH, { Authorization: basic('anyone', stack.config.adminApiKey) });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
  });
});

describe('Bull Board in headless Chromium', { timeout: BROWSER_TEST_MS }, () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  it('with a wrong password the browser is refused', async () => {
    const context = await openContext(browser, {
      httpCredentials: { username: 'operator', password: 'wrong' },
    });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${stack.baseUrl}${PATH}`);
      expect(response?.status()).toBe(401);
      expect(await page.textContent('body')).toContain('"unauthorized"');
    } finally {
      await context.close();
    }
  });

  it('with the platform key as basic-auth password it shows every queue', async () => {
    const context = await openContext(browser, {
      httpCredentials: { username: 'operator', password: stack.config.adminApiKey },
      viewport: { width: 1280, height: 800 },
    });
    try {
      const requests = recordRequests(context);
      const page = await context.newPage();
      const response = await page.goto(`${stack.baseUrl}${PATH}`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("default-src 'self'");
      for (const name of QUEUE_NAMES) {
        await page.getByText(name, { exact: true }).first().waitFor({ state: 'visible' });
      }
      // The admin page never reaches off this machine (Bull Board's own page links Google Fonts).
      expect(requests.outside(['127.0.0.1'])).toEqual([]);
      const screenshot = await page.screenshot({ fullPage: true });
      expect(screenshot.subarray(1, 4).toString()).toBe('PNG');
      // To look at the page: SCREENSHOT_DIR=/tmp npx vitest run test/foundation/bull-board.test.ts
      if (process.env.SCREENSHOT_DIR)
        await writeFile(join(process.env.SCREENSHOT_DIR, 'bull-board.png'), screenshot);
    } finally {
      await context.close();
    }
  });
});
