// Shared steps of the embed suites (docs/widget.md#embed): a firm's website on its own origin
// (a tiny HTTP server the test runs, sending the strict CSP the README gives), a page of it in
// Chromium with everything that went wrong recorded, and a widget key with its snippet.
import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { freePort } from '../../scripts/local/ports.js';
import type { ApiClient } from '../helpers/client.js';
import { BROWSER_STEP_MS, openContext } from '../helpers/browser.js';

// page.evaluate callbacks run in the browser; this program is typed for Node, without the DOM library.
declare const document: any, window: any;

/** The host page CSP of the README: only the service's origin may give scripts and answer fetches. */
export function strictHostCsp(serviceOrigin: string): string {
  return [
    "default-src 'none'",
    `script-src ${serviceOrigin}`,
    `connect-src ${serviceOrigin}`,
    // The site's own stylesheet; the widget itself needs no style-src.
    "style-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The site's own stylesheet, hostile on purpose: rules that would wreck a widget living in the
 * page's DOM (every button red and huge, every div hidden, fonts and colours for everything).
 */
export const HOSTILE_SITE_CSS = `
* { font-family: "Times New Roman", serif !important; color: #14532d; }
body { margin: 0; padding: 40px; background: #f0fdf4; line-height: 3; }
button { background: #ff0000 !important; font-size: 40px !important; border: 8px dotted #000 !important; }
div, section, form { display: none; }
input { width: 5px; }
intake-widget { opacity: 0.2 !important; display: none !important; }
h1 { font-size: 44px; margin: 0 0 12px; }
main p { font-size: 18px; max-width: 620px; }
`;

export interface FirmSite {
  origin: string;
  /** Sets the page served at `/` (the snippet goes into its body). */
  setBody(html: string): void;
  /** Names the service origin the page's CSP allows (for a site started before the service). */
  setServiceOrigin(origin: string): void;
  stop(): Promise<void>;
}

/** A static "firm website" on 127.0.0.1:<its own port>: `/` (the page) and `/site.css`. */
export async function startFirmSite(serviceOrigin = ''): Promise<FirmSite> {
  let service = serviceOrigin;
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  let body = '';
  const server: Server = createServer((req, res) => {
    if (req.url === '/site.css') {
      res.writeHead(200, { 'Content-Type': 'text/css; charset=utf-8' });
      res.end(HOSTILE_SITE_CSS);
      return;
    }
    if (req.url !== '/') {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': strictHostCsp(service),
    });
    res.end(
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Smith &amp; Lee, attorneys</title>' +
        '<link rel="stylesheet" href="/site.css"></head><body><main><h1>Smith &amp; Lee, attorneys at law</h1>' +
        '<p>Injured at work or on the road? Tell us what happened: our intake assistant takes your ' +
        'details and a lawyer calls you back today.</p></main>' +
        body +
        '</body></html>',
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    origin,
    setBody: (html) => {
      body = html;
    },
    setServiceOrigin: (origin) => {
      service = origin;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface OpenedSite {
  context: BrowserContext;
  page: Page;
  /** Console errors and warnings, page errors, failed requests and CSP violations. */
  problems: string[];
  /** Every response the page could read: "<status> <METHOD> <url>". */
  network: string[];
  /**
   * The browser's own network log (DevTools protocol), also holding answers the page was not
   * allowed to read: "<status> <METHOD> <url>", and "CORS <error> <METHOD> <url>" for each of those.
   */
  wire: string[];
}

/** A page of the site in a fresh context, every problem recorded. */
export async function openSite(browser: Browser, url: string): Promise<OpenedSite> {
  // A step that cannot happen fails well inside the test's own timeout, with what the page saw.
  const context = await openContext(browser, { viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  const problems: string[] = [];
  const network: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => network.push(`${r.status()} ${r.request().method()} ${r.url()}`));
  const wire: string[] = [];
  // DevTools sends a response's "extra info" (its status on the wire) on its own schedule, before
  // or after the request itself: each is kept by request id and the line is written once both are in.
  const requests = new Map<string, string>();
  const statuses = new Map<string, number>();
  const join = (requestId: string) => {
    const request = requests.get(requestId);
    const status = statuses.get(requestId);
    if (request === undefined || status === undefined) return;
    statuses.delete(requestId);
    wire.push(`${status} ${request}`);
  };
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.requestWillBeSent', (e) => {
    requests.set(e.requestId, `${e.request.method} ${e.request.url}`);
    join(e.requestId);
  });
  cdp.on('Network.responseReceivedExtraInfo', (e) => {
    statuses.set(e.requestId, e.statusCode);
    join(e.requestId);
  });
  cdp.on('Network.loadingFailed', (e) => {
    if (e.corsErrorStatus !== undefined)
      wire.push(`CORS ${e.corsErrorStatus.corsError} ${requests.get(e.requestId) ?? e.requestId}`);
  });
  await page.exposeFunction('__cspViolation', (text: string) => problems.push(`CSP violation: ${text}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e: any) =>
      window.__cspViolation(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  await page.goto(url);
  return { context, page, problems, network, wire };
}

/**
 * Waits until the browser's network log holds each line. DevTools reports a response's headers
 * (`Network.responseReceivedExtraInfo`) on its own schedule: it can arrive after the page has
 * already acted on the answer, or after `loadingFailed` for the same request.
 */
export async function seenOnWire(wire: string[], ...lines: string[]): Promise<void> {
  const deadline = Date.now() + BROWSER_STEP_MS;
  while (!lines.every((line) => wire.includes(line)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  const missing = lines.filter((line) => !wire.includes(line));
  // On failure the whole log is printed: what the browser did see is the clue.
  expect(missing, `not on the wire; the wire held:\n${wire.join('\n')}`).toEqual([]);
}

/** The widget's elements, inside its shadow root (Playwright's CSS locators pierce open ones). */
export const widgetPart = (page: Page, selector: string) => page.locator(`intake-widget ${selector}`);

/** Waits until the conversation holds a message with exactly this text (after its hidden "Agent: "). */
export async function waitForMessage(page: Page, role: 'agent' | 'user', text: string): Promise<void> {
  await page.waitForFunction(
    ({ role, text }) =>
      [
        ...(document.querySelector('intake-widget')?.shadowRoot?.querySelectorAll(`.iw-msg-${role}`) ?? []),
      ].some((m: any) => m.lastChild?.textContent === text),
    { role, text },
  );
}

/**
 * The widget's status line once it says something. Polled for a browser step's time: expect.poll's
 * own default (1 s) is shorter than a loaded machine's renderer can take to act on an answer.
 */
export async function statusText(page: Page): Promise<string> {
  const status = widgetPart(page, '.iw-status');
  await expect
    .poll(async () => (await status.textContent()) ?? '', { timeout: BROWSER_STEP_MS })
    .not.toBe('');
  return (await status.textContent()) ?? '';
}

/** The key's snippet as the API gives it. */
export async function snippetOf(client: ApiClient, keyId: string, query = ''): Promise<string> {
  const res = await client.get(`/api/widget-keys/${keyId}/snippet${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body as { html: string }).html;
}
