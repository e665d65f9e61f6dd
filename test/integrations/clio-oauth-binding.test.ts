// The Clio connect flow belongs to the browser that started it (docs/clio.md#connected-with-oauth):
// `connect` gives that browser a cookie the state is bound to, a callback from any other browser is
// refused with a page saying why (the code is never exchanged), and the tokens are kept only after
// the person who started it has seen which firm and which Clio account (Clio's who_am_i) and
// confirmed. Against the local Clio (test/fakes/clio-server.ts), whose users each have a Clio
// firm of their own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { readClioConnection } from '../../core/domain/crm/clio-connection-store.js';
import { startFakeClio, type FakeClio, type FakeClioUser } from '../fakes/clio-server.js';
import { BROWSER_TEST_MS, launchChromium, openContext } from '../helpers/browser.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { FlowBrowser, confirmationForm, registerClioRedirect } from './clio-oauth-browser.js';

const CLIENT_ID = 'clio-client-id';
const CLIENT_SECRET = 'clio-client-secret';

let clio: FakeClio;
let stack: Stack;

beforeAll(async () => {
  clio = await startFakeClio();
  clio.oauth.clientId = CLIENT_ID;
  clio.oauth.clientSecret = CLIENT_SECRET;
  stack = await startStack({
    env: { CLIO_CLIENT_ID: CLIENT_ID, CLIO_CLIENT_SECRET: CLIENT_SECRET, CLIO_BASE_URL: clio.url },
  });
  registerClioRedirect(clio, stack);
});
afterAll(async () => {
  await stack?.stop();
  await clio?.close();
});

const connections = () => stack.services.mongo.db.collection<any>(COLLECTIONS.clioConnections);
const waiting = () => stack.services.mongo.db.collection<any>(COLLECTIONS.clioOAuthConfirmations);
const connectUrl = (slug: string) => `${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${slug}`;
const crmOf = async (firm: { slug: string; client: any }) =>
  (await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.crm;

/** A firm, its staff's browser (signed in with the firm's key) and its own Clio user. */
async function firmWithStaff() {
  const firm = await createFirm(stack, {});
  const browser = new FlowBrowser(`Bearer ${firm.key}`).at(new URL(stack.baseUrl).origin);
  const user = clio.addUser(`Staff ${rand(4)}`, `staff-${rand(4)}@${firm.slug}.test`);
  return { firm, browser, user };
}

/** The browser opens the connect link: Clio's authorize URL (the link one could pass on). */
async function startConnect(browser: FlowBrowser, slug: string): Promise<string> {
  const res = await browser.request(connectUrl(slug));
  expect(res.status, await res.clone().text()).toBe(302);
  return res.headers.get('location')!;
}

/** At Clio, `user` (logged in there) approves in `browser`: the callback URL Clio sends it to. */
async function consentAtClio(browser: FlowBrowser, authorize: string, user: FakeClioUser) {
  clio.oauth.approver = user;
  const approved = await browser.request(authorize);
  expect(approved.status).toBe(302);
  return approved.headers.get('location')!;
}

/** Whether anything of `user`'s Clio was reached: a token issued for them, or their code exchanged. */
function clioTouched(user: FakeClioUser): string[] {
  return clio.oauth.grantsOf(user.id).filter((grant) => !clio.oauth.codes.has(grant));
}

describe('a connect link sent to another firm', () => {
  it("firm A's link clicked by firm B's staff: refused with a page saying why, B's Clio untouched", async () => {
    const a = await firmWithStaff();
    const b = await firmWithStaff();
    // B's staff once opened their own connect link: their browser holds a cookie of its own.
    await startConnect(b.browser, b.firm.slug);
    // A opens its connect link and sends the Clio page it leads to to B's staff ...
    const link = await startConnect(a.browser, a.firm.slug);
    // ... who, logged in to B's Clio, click "Allow" there: Clio sends B's browser to our callback.
    const callback = await consentAtClio(b.browser, link, b.user);
    const refused = await b.browser.request(callback);
    const page = await refused.text();
    expect(refused.status, page).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(refused.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(page).toMatch(/was not started in this browser/);
    expect(page).toMatch(/Nothing was connected/);
    // B's Clio: the code Clio gave B's browser was never exchanged, no token exists for it.
    expect(clioTouched(b.user)).toEqual([]);
    expect(
      clio.oauth.tokenRequests.filter((r) => r.code === new URL(callback).searchParams.get('code')),
    ).toEqual([]);
    expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();
    expect(await crmOf(a.firm)).toEqual({ provider: 'none' });
    expect(await crmOf(b.firm)).toEqual({ provider: 'none' });
    // The state is spent: the link cannot be used again, in any browser.
    expect((await a.browser.request(callback)).status).toBe(400);
    expect(clioTouched(b.user)).toEqual([]);
  });

  it('a callback with no cookie at all is refused the same way, and the reason is escaped', async () => {
    const a = await firmWithStaff();
    const link = await startConnect(a.browser, a.firm.slug);
    const stranger = new FlowBrowser().at(new URL(stack.baseUrl).origin);
    const callback = await consentAtClio(stranger, link, a.user);
    const refused = await stranger.request(callback);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/was not started in this browser/);
    expect(clioTouched(a.user)).toEqual([]);

    const denied = await stranger.request(
      `${stack.baseUrl}/api/integrations/clio/callback?error=${encodeURIComponent('<script>alert(1)</script>')}`,
    );
    const html = await denied.text();
    expect(denied.status).toBe(400);
    expect(denied.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
  });
});

describe('the confirmation step', () => {
  it('shows the firm and the Clio account, stores nothing until the one who started it confirms', async () => {
    const a = await firmWithStaff();
    const connect = await a.browser.request(connectUrl(a.firm.slug));
    expect(connect.status).toBe(302);
    // Local runs over http: no __Host- prefix, no Secure (docs/clio.md).
    const setCookie = connect.headers.getSetCookie().join('\n');
    expect(setCookie).toMatch(
      /^intake_oauth=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );

    const callback = await consentAtClio(a.browser, connect.headers.get('location')!, a.user);
    const shown = await a.browser.request(callback);
    const html = await shown.text();
    expect(shown.status, html).toBe(200);
    expect(html).toContain(`Firm ${a.firm.slug}`);
    expect(html).toContain(a.user.name);
    expect(html).toContain(a.user.email);
    expect(html).toContain(a.user.account.name);
    const whoAmI = clio.requests.filter((r) => r.path === '/api/v4/users/who_am_i.json');
    expect(whoAmI.at(-1)?.authorization).toMatch(/^Bearer access_/);
    expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();
    expect(await crmOf(a.firm)).toEqual({ provider: 'none' });
    // The waiting tokens are sealed as a connection's are (docs/operations.md#secrets-at-rest).
    const held = JSON.stringify(await waiting().find({ firm: a.firm.slug }).toArray());
    expect(held).toContain('"holder"');
    expect(held).not.toMatch(/(access|refresh)_[0-9a-f]{32}/);

    const form = confirmationForm(html, stack.baseUrl);
    // The confirmation from another browser (the page's address passed on): refused.
    const other = new FlowBrowser().at(new URL(stack.baseUrl).origin);
    const stolen = await other.request(form.connect, { method: 'POST' });
    expect(stolen.status).toBe(403);
    // A post from another site's page, even were the cookie sent: refused.
    const forged = await a.browser.request(form.connect, {
      method: 'POST',
      headers: { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(forged.status).toBe(403);
    expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();

    const confirmed = await a.browser.request(form.connect, {
      method: 'POST',
      headers: { origin: new URL(stack.baseUrl).origin },
    });
    const done = await confirmed.text();
    expect(confirmed.status, done).toBe(200);
    expect(done).toMatch(new RegExp(`Firm ${a.firm.slug}.*is connected to Clio`));
    expect(JSON.stringify(await connections().findOne({ _id: a.firm.slug }))).not.toMatch(
      /(access|refresh)_[0-9a-f]{32}/,
    );
    const kept = await readClioConnection(stack.services.mongo.db, a.firm.slug);
    expect(kept).toMatchObject({ access_token: expect.stringMatching(/^access_/), status: 'connected' });
    expect(await crmOf(a.firm)).toMatchObject({ provider: 'clio', status: 'connected' });
    // Used once.
    expect((await a.browser.request(form.connect, { method: 'POST' })).status).toBe(400);
  });

  it('cancelling keeps nothing', async () => {
    const a = await firmWithStaff();
    const callback = await consentAtClio(a.browser, await startConnect(a.browser, a.firm.slug), a.user);
    const form = confirmationForm(await (await a.browser.request(callback)).text(), stack.baseUrl);
    const cancelled = await a.browser.request(form.cancel, { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect(await cancelled.text()).toMatch(/Nothing was connected/);
    expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();
    expect(await crmOf(a.firm)).toEqual({ provider: 'none' });
    expect((await a.browser.request(form.connect, { method: 'POST' })).status).toBe(400);
  });
});

describe('in headless Chromium', { timeout: BROWSER_TEST_MS }, () => {
  it('connect → Clio consent → callback → confirmation → connected', async () => {
    const a = await firmWithStaff();
    clio.oauth.approver = a.user;
    const browser = await launchChromium();
    try {
      const context = await openContext(browser, {
        httpCredentials: { username: 'firm', password: a.firm.key },
      });
      const page = await context.newPage();
      const visited: string[] = [];
      page.on('request', (request) => {
        if (request.isNavigationRequest()) visited.push(new URL(request.url()).pathname);
      });
      const response = await page.goto(connectUrl(a.firm.slug));
      expect(response?.status()).toBe(200);
      expect(visited).toEqual([
        '/api/integrations/clio/connect',
        '/oauth/authorize',
        '/api/integrations/clio/callback',
      ]);
      expect(await page.textContent('h1')).toBe('Connect Clio?');
      expect(await page.textContent('#firm')).toContain(`Firm ${a.firm.slug}`);
      expect(await page.textContent('#clio-account')).toContain(a.user.email);
      expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();
      await Promise.all([page.waitForURL(/\/api\/integrations\/clio\/confirm/), page.click('#confirm')]);
      expect(await page.textContent('h1')).toBe('Clio connected');
      expect(await page.textContent('#connected')).toContain(`Firm ${a.firm.slug}`);
    } finally {
      await browser.close();
    }
    expect(await crmOf(a.firm)).toMatchObject({ provider: 'clio', status: 'connected' });
    expect(clio.oauth.grantsOf(a.user.id).length).toBeGreaterThan(1);
  });

  it("firm A's link opened in firm B's browser: the refusal page, B's Clio untouched", async () => {
    const a = await firmWithStaff();
    const b = await firmWithStaff();
    const browser = await launchChromium();
    try {
      const contextA = await openContext(browser);
      // A's browser opens the connect link (its cookie jar is the context's) and copies where it leads.
      const started = await contextA.request.get(connectUrl(a.firm.slug), {
        maxRedirects: 0,
        headers: { authorization: `Basic ${Buffer.from(`firm:${a.firm.key}`).toString('base64')}` },
      });
      expect(started.status()).toBe(302);
      const link = started.headers()['location']!;
      const contextB = await openContext(browser, {
        httpCredentials: { username: 'firm', password: b.firm.key },
      });
      const page = await contextB.newPage();
      clio.oauth.approver = b.user;
      const response = await page.goto(link);
      expect(new URL(page.url()).pathname).toBe('/api/integrations/clio/callback');
      expect(response?.status()).toBe(403);
      expect(await page.textContent('h1')).toBe('Clio was not connected');
      expect(await page.textContent('body')).toContain('was not started in this browser');
    } finally {
      await browser.close();
    }
    expect(clioTouched(b.user)).toEqual([]);
    expect(await crmOf(a.firm)).toEqual({ provider: 'none' });
    expect(await connections().findOne({ _id: a.firm.slug })).toBeNull();
  });
});
