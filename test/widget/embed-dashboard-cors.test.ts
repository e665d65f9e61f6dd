// A firm's dashboard from a browser (docs/authentication.md#cors): a page on a
// CORS_ORIGINS origin holding a session token calls the API with fetch and Authorization; the
// same call from any other origin is refused by the browser (no CORS headers for it).
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { BROWSER_TEST_MS, launchChromium } from '../helpers/browser.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { openSite, seenOnWire, startFirmSite, type FirmSite } from './embed-helpers.js';

let stack: Stack;
let browser: Browser;
let dashboard: FirmSite;
let other: FirmSite;
let firm: Awaited<ReturnType<typeof createFirm>>;
let sessionToken: string;

beforeAll(async () => {
  // The sites' origins must be known before the service starts: CORS_ORIGINS names one of them.
  dashboard = await startFirmSite();
  other = await startFirmSite();
  stack = await startStack({ env: { CORS_ORIGINS: dashboard.origin } });
  dashboard.setServiceOrigin(stack.baseUrl);
  other.setServiceOrigin(stack.baseUrl);
  firm = await createFirm(stack);
  sessionToken = await signSessionToken(
    { firm: firm.slug, sub: 'dashboard-user' },
    stack.config.sessionSecret,
    3600,
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  await other?.stop();
  await stack?.stop();
});

/** list-calls with fetch from the page, as a dashboard's script would call it. */
async function listCallsFrom(site: FirmSite, expectOnWire: string[] = []) {
  const opened = await openSite(browser, `${site.origin}/`);
  try {
    const result = await opened.page.evaluate(
      async ({ api, token, firmSlug }) => {
        try {
          const res = await fetch(`${api}/api/v2/list-calls`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ firmSlug }),
          });
          return { status: res.status, body: await res.json() };
        } catch (err) {
          return { error: String(err) };
        }
      },
      { api: stack.baseUrl, token: sessionToken, firmSlug: firm.slug },
    );
    // Before the page goes: the browser reports response headers on its own schedule.
    await seenOnWire(opened.wire, ...expectOnWire);
    return { result, problems: opened.problems, wire: opened.wire };
  } finally {
    await opened.context.close();
  }
}

describe('the API from a browser dashboard', { timeout: BROWSER_TEST_MS }, () => {
  it('on a CORS_ORIGINS origin: list-calls with a session token answers 200', async () => {
    const onWire = [
      `204 OPTIONS ${stack.baseUrl}/api/v2/list-calls`,
      `200 POST ${stack.baseUrl}/api/v2/list-calls`,
    ];
    const { result, problems, wire } = await listCallsFrom(dashboard, onWire);
    expect(result).toEqual({ status: 200, body: { calls: [], next_cursor: '' } });
    expect(problems).toEqual([]);
    for (const line of onWire) expect(wire).toContain(line);
  });

  it('on another origin: the browser refuses the answer', async () => {
    const { result, problems, wire } = await listCallsFrom(other);
    expect(result).toEqual({ error: 'TypeError: Failed to fetch' });
    expect(problems.join('\n')).toMatch(/blocked by CORS policy/);
    // The preflight got no CORS headers, so the request itself never left the browser.
    expect(wire.filter((line) => /^\d{3} POST /.test(line))).toEqual([]);
  });
});
