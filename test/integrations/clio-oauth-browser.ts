// A browser as far as the Clio connect flow needs one: its own cookie jar (what `connect` sets
// comes back on the callback and the confirmation), redirects not followed, HTML asked for.
import { expect } from 'vitest';
import type { FakeClio } from '../fakes/clio-server.js';
import type { Stack } from '../helpers/stack.js';

/**
 * Registers the stack's callback as the Clio app's redirect URI at the local Clio, which refuses
 * to authorize for any other: the address docs/clio.md has the operator register,
 * PUBLIC_BASE_URL/api/integrations/clio/callback, from the stack's own PUBLIC_BASE_URL.
 */
export function registerClioRedirect(clio: FakeClio, stack: Stack): void {
  clio.oauth.redirectUris.push(
    `${stack.env.PUBLIC_BASE_URL!.replace(/\/+$/, '')}/api/integrations/clio/callback`,
  );
}

export class FlowBrowser {
  private readonly jar = new Map<string, string>();

  constructor(private readonly authorization?: string) {}

  /** The cookies this browser holds, by name. */
  cookies(): ReadonlyMap<string, string> {
    return this.jar;
  }

  async request(url: string, init: { method?: string; headers?: Record<string, string> } = {}) {
    const origin = new URL(url).origin;
    const cookie = [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: {
        accept: 'text/html,application/xhtml+xml',
        ...(this.authorization === undefined ? {} : { authorization: this.authorization }),
        ...(cookie === '' || !this.sameHost(origin) ? {} : { cookie }),
        ...init.headers,
      },
    });
    if (this.sameHost(origin)) {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        this.jar.set(pair!.slice(0, at).trim(), pair!.slice(at + 1).trim());
      }
    }
    return res;
  }

  private home: string | undefined;

  /** The service's origin: cookies are kept and sent for it only (not for Clio's). */
  at(origin: string): this {
    this.home = origin;
    return this;
  }

  private sameHost(origin: string): boolean {
    return this.home === undefined || this.home === origin;
  }
}

/** The confirmation page's form: where it posts to connect (and to cancel). */
export function confirmationForm(html: string, baseUrl: string): { connect: string; cancel: string } {
  const actions = [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) =>
    new URL(m[1]!.replaceAll('&amp;', '&'), baseUrl).toString(),
  );
  const connect = actions.find((a) => new URL(a).searchParams.get('decision') === 'connect');
  const cancel = actions.find((a) => new URL(a).searchParams.get('decision') === 'cancel');
  expect(connect, html).toBeDefined();
  expect(cancel, html).toBeDefined();
  return { connect: connect!, cancel: cancel! };
}

/**
 * Connects the firm's Clio as its staff's browser would: connect link (signed in with the firm's
 * key) → Clio's authorize → our callback → the confirmation page's Connect. Returns the last page.
 */
export async function connectClioInBrowser(
  baseUrl: string,
  firm: { slug: string; key: string },
  query = '',
): Promise<Response> {
  const browser = new FlowBrowser(`Bearer ${firm.key}`).at(new URL(baseUrl).origin);
  const start = await browser.request(
    `${baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}${query}`,
  );
  expect(start.status, await start.clone().text()).toBe(302);
  const approved = await browser.request(start.headers.get('location')!);
  expect(approved.status).toBe(302);
  const shown = await browser.request(approved.headers.get('location')!);
  const html = await shown.text();
  expect(shown.status, html).toBe(200);
  const done = await browser.request(confirmationForm(html, baseUrl).connect, { method: 'POST' });
  expect(done.status, await done.clone().text()).toBe(200);
  return done;
}
