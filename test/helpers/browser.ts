import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';
import { inject } from 'vitest';
import { CHROMIUM_ARGS } from './chromium.js';

// Headless Debian Chromium driven by playwright-core (`npx playwright install` cannot download
// a browser here). The global setup makes sure the binary exists and provides its path.

/**
 * How long a browser test, and one step of it (a navigation, a wait for an element), may take
 * before it is called hung. A page that renders in 1–7 s here, alone or beside six busy loops,
 * once took more than the 30 s of an ordinary test in a full CI run on a throttled machine
 * (GET /docs, 2026-12-01): the Chromium renderer shares two cores with three test forks, their
 * services and the host's own throttling. These are hang detectors, not speed limits, so they
 * sit far above any measured duration; a step fails well inside its test's budget, naming what
 * it waited for. Every describe with a browser takes `{ timeout: BROWSER_TEST_MS }`.
 */
export const BROWSER_TEST_MS = 180_000;
export const BROWSER_STEP_MS = 60_000;

/** A fresh context whose pages wait up to BROWSER_STEP_MS for a step (Playwright's own default is 30 s). */
export async function openContext(
  browser: Browser,
  options?: BrowserContextOptions,
): Promise<BrowserContext> {
  const context = await browser.newContext(options);
  context.setDefaultTimeout(BROWSER_STEP_MS);
  return context;
}

export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: inject('chromiumPath'),
    args: [...CHROMIUM_ARGS, ...extraArgs],
  });
}

/**
 * Chromium resolves `hostname` to 127.0.0.1 and nothing else, so a page can be opened under a
 * public-looking name (pages may behave differently on localhost) while no request can leave.
 * 127.0.0.1 itself stays reachable (the rules would otherwise refuse even the IP literal).
 */
export function mapHostToLoopback(hostname: string): string[] {
  return [`--host-resolver-rules=MAP ${hostname} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`];
}

export interface RequestLog {
  /** Every URL the context requested (documents, scripts, styles, fetches, images). */
  urls: string[];
  /** The requested URLs whose host is not one of `hosts`. */
  outside(hosts: string[]): string[];
}

export function recordRequests(context: BrowserContext): RequestLog {
  const urls: string[] = [];
  context.on('request', (request) => urls.push(request.url()));
  return {
    urls,
    outside: (hosts) =>
      urls.filter((url) => {
        const { protocol, hostname } = new URL(url);
        if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return false;
        return !hosts.includes(hostname);
      }),
  };
}
