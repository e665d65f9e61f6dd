// Clio connected with OAuth (docs/clio.md) against the local Clio (test/fakes/clio-server.ts),
// which speaks Clio's authorize redirect, its token grants and error bodies, and issues access
// tokens that expire: the connect redirect, the callback, single-use states, refresh before
// expiry and once after a 401 (one refresh for many racing effects), and a refused refresh.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clioTokenSource } from '../../core/domain/crm/clio-connection.js';
import { disconnectClio } from '../../core/domain/crm/clio-disconnect.js';
import { readClioConnection } from '../../core/domain/crm/clio-connection-store.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { BROWSER_TEST_MS, launchChromium, openContext } from '../helpers/browser.js';
import { FlowBrowser, connectClioInBrowser, registerClioRedirect } from './clio-oauth-browser.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import {
  callForProvider,
  storedCall,
  postSigned,
  retellCallAnalyzed,
  settledCall,
} from '../webhooks/support.js';

const SECRET = 'whsec_clio_oauth_test';
const TOKEN_LOCK_MS = 2000;
const CLIENT_ID = 'clio-client-id';
const CLIENT_SECRET = 'clio-client-secret';

let clio: FakeClio;
let smtp: FakeSmtp;
let stack: Stack;

beforeAll(async () => {
  [clio, smtp] = await Promise.all([startFakeClio(), startFakeSmtp()]);
  clio.oauth.clientId = CLIENT_ID;
  clio.oauth.clientSecret = CLIENT_SECRET;
  stack = await startStack({
    workers: true,
    env: {
      CLIO_CLIENT_ID: CLIENT_ID,
      CLIO_CLIENT_SECRET: CLIENT_SECRET,
      CLIO_BASE_URL: clio.url,
      SMTP_URL: smtp.url,
      // Every CRM effect of the racing calls below can run at once.
      WORKER_CONCURRENCY: '50',
      // A refresh outlasts the firm's token lock within seconds (the fake's slow token endpoint).
      OAUTH_TOKEN_LOCK_MS: String(TOKEN_LOCK_MS),
    },
  });
  registerClioRedirect(clio, stack);
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all([clio?.close(), smtp?.stop()]);
});

/** A firm's Clio connection as stored, its sealed tokens opened (docs/operations.md#secrets-at-rest). */
const connections = () => ({
  findOne: ({ _id }: { _id: string }): Promise<any> => readClioConnection(stack.services.mongo.db, _id),
});
const get = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { redirect: 'manual', headers });

const browserOf = (firm: { key: string }) =>
  new FlowBrowser(`Bearer ${firm.key}`).at(new URL(stack.baseUrl).origin);

/** The connect link's redirect to Clio, as the firm's browser gets it. */
async function connectRedirect(
  firm: { slug: string; key: string },
  region?: string,
  browser = browserOf(firm),
) {
  const res = await browser.request(
    `${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}${region ? `&region=${region}` : ''}`,
  );
  expect(res.status, await res.clone().text()).toBe(302);
  return new URL(res.headers.get('location')!);
}

/** Connect link → Clio's authorize (approval) → the callback URL Clio sends the browser to. */
async function callbackUrl(firm: { slug: string; key: string }, browser = browserOf(firm)): Promise<string> {
  const authorize = await connectRedirect(firm, undefined, browser);
  const approved = await browser.request(authorize.toString());
  expect(approved.status).toBe(302);
  return approved.headers.get('location')!;
}

/** The whole flow in the firm's browser, confirmed: the connected page. */
const connect = (firm: { slug: string; key: string }) => connectClioInBrowser(stack.baseUrl, firm);
/** Connects with an access token inside the refresh margin (60 s): its next use refreshes it. */
async function connectExpiring(firm: { slug: string; key: string }): Promise<void> {
  clio.oauth.expiresIn = 60;
  try {
    await connect(firm);
  } finally {
    clio.oauth.expiresIn = 2_592_000;
  }
}

const oauthFirm = () =>
  createFirm(stack, { voice_webhook_secret: SECRET, notification_emails: [`desk-${rand(3)}@firm.test`] });

async function deliver(slug: string) {
  const body = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
  expect((await postSigned(stack, slug, SECRET, body)).status).toBe(200);
  return (await callForProvider(stack, slug, body.call.call_id))._id;
}

describe('connect and callback', () => {
  it('the connect link redirects to Clio authorize with response_type, client_id, redirect_uri and a state', async () => {
    const firm = await oauthFirm();
    const location = await connectRedirect(firm);
    expect(`${location.origin}${location.pathname}`).toBe(`${clio.url}/oauth/authorize`);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(location.searchParams.get('redirect_uri')).toBe(
      `${stack.config.publicBaseUrl}/api/integrations/clio/callback`,
    );
    const state = location.searchParams.get('state')!;
    expect(state.length).toBeGreaterThanOrEqual(32);
    const claimed = await stack.services.mongo.db
      .collection<any>(COLLECTIONS.clioOAuthStates)
      .findOne({ _id: state });
    expect(claimed?.firm).toBe(firm.slug);
  });

  it('takes the token as a basic-auth password (a browser), and refuses another firm (403)', async () => {
    const firm = await oauthFirm();
    const other = await oauthFirm();
    const basic = `Basic ${Buffer.from(`x:${firm.key}`).toString('base64')}`;
    const res = await get(`${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}&region=eu`, {
      authorization: basic,
    });
    expect(res.status).toBe(302);
    const refused = await get(`${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${other.slug}`, {
      authorization: `Bearer ${firm.key}`,
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.code).toBe('forbidden');
  });

  it('the confirmed callback stores the tokens (never shown) and says the firm is connected', async () => {
    const firm = await oauthFirm();
    const page = await connect(firm);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(await page.text()).toMatch(new RegExp(`Firm ${firm.slug}.*is connected to Clio`));
    const stored = await connections().findOne({ _id: firm.slug });
    expect(stored.access_token).toMatch(/^access_/);
    expect(stored.refresh_token).toMatch(/^refresh_/);
    expect(stored.expires_at.getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const shown = await firm.client.get(`/api/firms/${firm.slug}`);
    expect(shown.body.settings.crm).toEqual({
      provider: 'clio',
      status: 'connected',
      region: 'us',
      connected_at: expect.any(String),
    });
    expect(shown.text).not.toContain(stored.access_token);
    expect(shown.text).not.toContain(stored.refresh_token);
    const exchange = clio.oauth.tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
    expect(exchange.redirect_uri).toBe(`${stack.config.publicBaseUrl}/api/integrations/clio/callback`);
  });

  it('the code is exchanged with the very redirect_uri of its authorize request, the one registered at Clio', async () => {
    const firm = await oauthFirm();
    const browser = browserOf(firm);
    const authorize = await connectRedirect(firm, undefined, browser);
    const approved = await browser.request(authorize.toString());
    expect(approved.status).toBe(302);
    const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;
    expect((await browser.request(approved.headers.get('location')!)).status).toBe(200);
    const exchanges = clio.oauth.tokenRequests.filter(
      (r) => r.grant_type === 'authorization_code' && r.code === code,
    );
    expect(exchanges).toHaveLength(1);
    // The same string, not merely one Clio would match (on a loopback address it ignores the port).
    expect(exchanges[0]!.redirect_uri).toBe(authorize.searchParams.get('redirect_uri'));
    expect(clio.oauth.redirectUris).toContain(exchanges[0]!.redirect_uri);
  });

  it('a used, unknown or expired state is 400 and stores nothing', async () => {
    const firm = await oauthFirm();
    const browser = browserOf(firm);
    const url = await callbackUrl(firm, browser);
    expect((await browser.request(url)).status).toBe(200);
    const again = await browser.request(url, { headers: { accept: 'application/json' } });
    expect(again.status).toBe(400);
    expect(((await again.json()) as any).error.code).toBe('invalid_request');

    const unknown = await get(`${stack.baseUrl}/api/integrations/clio/callback?code=abc&state=${rand(24)}`);
    expect(unknown.status).toBe(400);

    const late = await oauthFirm();
    const lateBrowser = browserOf(late);
    const lateUrl = new URL(await callbackUrl(late, lateBrowser));
    await stack.services.mongo.db
      .collection<any>(COLLECTIONS.clioOAuthStates)
      .updateOne(
        { _id: lateUrl.searchParams.get('state') },
        { $set: { expires_at: new Date(Date.now() - 1000) } },
      );
    expect((await lateBrowser.request(lateUrl.toString())).status).toBe(400);
    expect(await connections().findOne({ _id: late.slug })).toBeNull();
    expect((await late.client.get(`/api/firms/${late.slug}`)).body.settings.crm).toEqual({
      provider: 'none',
    });
  });

  it('without CLIO_CLIENT_ID the connect link is 409 clio_oauth_not_configured', async () => {
    const bare = await startStack({});
    try {
      const firm = await createFirm(bare, {});
      const res = await get(`${bare.baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}`, {
        authorization: `Bearer ${firm.key}`,
      });
      expect(res.status).toBe(409);
      expect(((await res.json()) as any).error.code).toBe('clio_oauth_not_configured');
    } finally {
      await bare.stop();
    }
  });
});

describe('in a browser', { timeout: BROWSER_TEST_MS }, () => {
  it("headless Chromium follows the connect link through Clio's authorize to the confirmation, then connects", async () => {
    const firm = await oauthFirm();
    const browser = await launchChromium();
    try {
      // The firm's key as the basic-auth password, as a person opening the link would give it.
      const context = await openContext(browser, {
        httpCredentials: { username: 'firm', password: firm.key },
      });
      const page = await context.newPage();
      const visited: string[] = [];
      page.on('request', (request) => {
        if (request.isNavigationRequest()) visited.push(new URL(request.url()).pathname);
      });
      const response = await page.goto(
        `${stack.baseUrl}/api/integrations/clio/connect?firmSlug=${firm.slug}&region=ca`,
      );
      expect(response?.status()).toBe(200);
      expect(visited).toEqual(
        expect.arrayContaining([
          '/api/integrations/clio/connect',
          '/oauth/authorize',
          '/api/integrations/clio/callback',
        ]),
      );
      expect(new URL(page.url()).pathname).toBe('/api/integrations/clio/callback');
      expect(await page.textContent('#firm')).toContain(`Firm ${firm.slug}`);
      await Promise.all([page.waitForURL(/\/api\/integrations\/clio\/confirm/), page.click('#confirm')]);
      expect(await page.textContent('#connected')).toContain(`Firm ${firm.slug}`);
      expect(await page.textContent('h1')).toBe('Clio connected');
    } finally {
      await browser.close();
    }
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.crm).toMatchObject({
      provider: 'clio',
      status: 'connected',
      region: 'ca',
    });
    expect((await connections().findOne({ _id: firm.slug }))?.base_url).toBe(clio.url);
  });
});

describe('tokens in use', () => {
  it('a token about to expire is refreshed before use, and the new refresh token replaces the old', async () => {
    const firm = await oauthFirm();
    await connectExpiring(firm);
    const before = await connections().findOne({ _id: firm.slug });
    const refreshes = clio.oauth.refreshCount();
    const callId = await deliver(firm.slug);
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
    expect(clio.oauth.refreshCount() - refreshes).toBe(1);
    const after = await connections().findOne({ _id: firm.slug });
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect(after.access_token).not.toBe(before.access_token);
    expect(clio.oauth.refreshTokens.has(before.refresh_token)).toBe(false);
    expect(after.expires_at.getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  });

  it('a 401 with 10 effects racing: exactly one grant_type=refresh_token request, every effect done', async () => {
    const firm = await oauthFirm();
    await connect(firm);
    clio.oauth.expireAccessTokens(); // Clio now answers 401 to the stored token
    const refreshes = clio.oauth.refreshCount();
    // The 10 effects' first requests are held until all 10 are in flight, then all get their 401 at once.
    const release = clio.hold();
    let callIds: string[];
    try {
      callIds = await Promise.all(Array.from({ length: 10 }, () => deliver(firm.slug)));
      await eventually(async () => expect(clio.held()).toBe(10), 30_000);
    } finally {
      release();
    }
    for (const id of callIds) expect((await settledCall(firm.client, id, 60_000)).effects.crm).toBe('done');
    expect(clio.oauth.refreshCount() - refreshes).toBe(1);
  });

  it('a refresh slower than the token lock: the lock is renewed, and no other worker refreshes with the same refresh token', async () => {
    const firm = await oauthFirm();
    await connectExpiring(firm);
    const before = await connections().findOne({ _id: firm.slug });
    const refreshes = clio.oauth.refreshCount();
    // Another worker process: services of its own, over a Redis connection of its own.
    const other = createServices(stack.config, createLogger(stack.config.logLevel, 'test'), 'worker');
    // Clio takes longer than the lock's TTL, several times over, to answer the refresh.
    clio.oauth.tokenDelayMs = 2.5 * TOKEN_LOCK_MS;
    try {
      const first = clioTokenSource(stack.services, firm.slug).current();
      await eventually(async () => expect(clio.oauth.refreshCount()).toBe(refreshes + 1), 30_000, 20);
      // The first worker's refresh is at Clio; the other needs a token now.
      const second = clioTokenSource(other, firm.slug).current();
      const [a, b] = await Promise.all([first, second]);
      expect(b).toBe(a);
    } finally {
      clio.oauth.tokenDelayMs = 0;
      await other.close();
    }
    expect(clio.oauth.refreshCount() - refreshes).toBe(1);
    const after = await connections().findOne({ _id: firm.slug });
    expect(after.status).toBe('connected');
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect(clio.oauth.refreshTokens.has(after.refresh_token)).toBe(true);
  });

  it('a disconnect whose refresh is slower than the token lock keeps the lock: no worker refreshes meanwhile, none gets a token after', async () => {
    const firm = await oauthFirm();
    await connect(firm);
    // The access token has expired: ending the grant first asks Clio for a fresh one.
    await stack.services.mongo.db
      .collection(COLLECTIONS.clioConnections)
      .updateOne({ _id: firm.slug as never }, { $set: { expires_at: new Date(Date.now() - 60_000) } });
    const refreshes = clio.oauth.refreshCount();
    const other = createServices(stack.config, createLogger(stack.config.logLevel, 'test'), 'worker');
    clio.oauth.tokenDelayMs = 2.5 * TOKEN_LOCK_MS;
    try {
      const disconnecting = disconnectClio(stack.services, firm.slug);
      await eventually(async () => expect(clio.oauth.refreshCount()).toBe(refreshes + 1), 30_000, 20);
      // Another worker needs the firm's token while the disconnect's refresh is at Clio.
      const wanted = clioTokenSource(other, firm.slug).current();
      wanted.catch(() => {});
      await disconnecting;
      await expect(wanted).rejects.toThrow();
    } finally {
      clio.oauth.tokenDelayMs = 0;
      await other.close();
    }
    expect(clio.oauth.refreshCount() - refreshes).toBe(1);
    expect(await connections().findOne({ _id: firm.slug })).toBeNull();
  });

  it('a refused refresh (invalid_grant): reconnect_required, the effect failed with that reason, one mail', async () => {
    const firm = await oauthFirm();
    await connect(firm);
    const to = (await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.notification_emails[0];
    clio.oauth.expireAccessTokens();
    clio.oauth.revokeRefreshTokens();
    const callIds = await Promise.all([deliver(firm.slug), deliver(firm.slug), deliver(firm.slug)]);
    for (const id of callIds) {
      expect((await settledCall(firm.client, id)).effects.crm).toBe('failed');
      const record = (await storedCall(stack, id))!.effects!.crm as any;
      expect(record.last_error).toMatch(/reconnect_required/);
      expect(record.attempts).toBeLessThanOrEqual(2);
      // The reason reaches the API, where the firm can act on it.
      expect((await firm.client.get(`/api/v2/get-call/${id}`)).body.effect_reasons).toMatchObject({
        crm: 'reconnect_required',
      });
    }
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.crm).toMatchObject({
      provider: 'clio',
      status: 'reconnect_required',
    });
    const mails = () =>
      smtp.messages.filter((m) => m.to.includes(to) && /connected again/.test(m.header('subject') ?? ''));
    await eventually(async () => expect(mails()).toHaveLength(1));
    const text = mails()[0]!
      .raw.replace(/=\r?\n/g, '')
      .replace(/=3D/g, '='); // quoted-printable
    expect(text).toContain(`/api/integrations/clio/connect?firmSlug=${firm.slug}`);
    // A later call neither refreshes again nor mails again.
    const refreshes = clio.oauth.refreshCount();
    const later = await deliver(firm.slug);
    expect((await settledCall(firm.client, later)).effects.crm).toBe('failed');
    expect(clio.oauth.refreshCount()).toBe(refreshes);
    expect(mails()).toHaveLength(1);
  });

  it('a refused refresh whose mail could not be sent (SMTP down): the next attempt sends it, once', async () => {
    const firm = await oauthFirm();
    await connect(firm);
    const to = (await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.notification_emails[0];
    const mails = () =>
      smtp.messages.filter((m) => m.to.includes(to) && /connected again/.test(m.header('subject') ?? ''));
    clio.oauth.expireAccessTokens();
    clio.oauth.revokeRefreshTokens();
    const crmFailed = (callId: string) =>
      eventually(async () => {
        const call = await firm.client.get(`/api/v2/get-call/${callId}`);
        expect(call.body.effects?.crm).toBe('failed');
      }, 30_000);
    smtp.failNext(1000);
    try {
      const first = await deliver(firm.slug);
      await crmFailed(first);
      expect(mails()).toHaveLength(0);
      expect((await connections().findOne({ _id: firm.slug }))?.reconnect_noticed).toBe(false);
    } finally {
      smtp.failNext(0);
    }
    const second = await deliver(firm.slug);
    await crmFailed(second);
    await eventually(async () => expect(mails()).toHaveLength(1));
    expect((await connections().findOne({ _id: firm.slug }))?.reconnect_noticed).toBe(true);
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.crm).toMatchObject({
      status: 'reconnect_required',
    });
    const third = await deliver(firm.slug);
    await crmFailed(third);
    expect(mails()).toHaveLength(1);
  });

  it('a pasted crm.access_token keeps working', async () => {
    const firm = await createFirm(stack, {
      voice_webhook_secret: SECRET,
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    const callId = await deliver(firm.slug);
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
  });
});
