// URLs the service calls for a firm (slack_webhook_url,
// crm.base_url) are https:// to a public address, checked when stored and when called
// (core/platform/url-policy.ts); the write-only Clio token cannot be sent to a new base_url
// without sending it again. ALLOW_PRIVATE_URLS=true lifts only https:// and loopback (local runs,
// tests): every other non-public address stays refused, as written and as resolved.
// The rule itself, without DNS or sockets, is tested in test/unit/url-policy.test.ts; here: the
// system resolver, the socket-level lookup, and the API applying the rule.
import { openSettings } from '../../core/domain/firms/firm-secrets.js';
import { createServer, get, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpRequestError, guardedRequest } from '../../core/integrations/http/guarded-http.js';
import { loadConfig } from '../../core/platform/config.js';
import {
  assertResolvesToPublic,
  publicOnlyLookup,
  UrlNotAllowedError,
  type ResolveAll,
} from '../../core/platform/url-policy.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { LENIENT_REFUSED_ADDRESSES, REFUSED_URLS, SLACK_WEBHOOK_URL } from '../helpers/url-samples.js';

const strict = { allowHttpAndLoopback: false };
const lenient = { allowHttpAndLoopback: true };

describe('assertResolvesToPublic with the system resolver', () => {
  it('refuses a host that resolves to loopback (localhost) unless private URLs are allowed', async () => {
    await expect(assertResolvesToPublic('https://localhost/', strict)).rejects.toBeInstanceOf(
      UrlNotAllowedError,
    );
    await expect(assertResolvesToPublic('https://localhost/', lenient)).resolves.toBeUndefined();
  });

  it('with private URLs allowed, still refuses every non-public address that is not loopback, before any request', async () => {
    for (const [host] of LENIENT_REFUSED_ADDRESSES) {
      const url = `http://${host}/latest`;
      await expect(assertResolvesToPublic(url, lenient)).rejects.toBeInstanceOf(UrlNotAllowedError);
      await expect(guardedRequest(url, { method: 'GET', policy: lenient })).rejects.toBeInstanceOf(
        UrlNotAllowedError,
      );
    }
  });

  it('a name that does not resolve is a failed request that was never sent (callers answer 502), not a raw DNS error', async () => {
    // `.invalid` never resolves (RFC 6761). Found by the fuzzer: a firm's Cal.com host that did not
    // resolve reached the API as getaddrinfo's own error, a 500.
    const failure = await guardedRequest('https://no-such-host.invalid/v2/slots', {
      method: 'GET',
      policy: strict,
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HttpRequestError);
    expect((failure as HttpRequestError).sent).toBe(false);
    expect((failure as Error).message).toMatch(/^GET no-such-host\.invalid: /);
  });
});

describe('publicOnlyLookup (the socket connects only to a checked address)', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A resolver answering `addresses` for every name: what DNS would say of a re-pointed name. */
  const answering =
    (...addresses: string[]): ResolveAll =>
    (_hostname, _options, callback) =>
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );

  const fetchVia = (allowHttpAndLoopback: boolean, host = 'localhost', resolve?: ResolveAll) =>
    new Promise<string>((resolve_, reject) => {
      const agent = new Agent({ lookup: publicOnlyLookup({ allowHttpAndLoopback }, resolve) });
      const req = get({ host, port, path: '/', agent, family: 4 }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve_(body));
      });
      req.on('error', reject);
      req.on('close', () => agent.destroy());
    });

  it('refuses to connect to a host that resolves to 127.0.0.1', async () => {
    await expect(fetchVia(false)).rejects.toBeInstanceOf(UrlNotAllowedError);
  });

  it('connects with private URLs allowed', async () => {
    await expect(fetchVia(true)).resolves.toBe('reached');
    // The socket goes where the lookup says: a name it resolves to loopback is reached.
    await expect(fetchVia(true, 'hooks.example.com', answering('127.0.0.1'))).resolves.toBe('reached');
  });

  it('with private URLs allowed, refuses to connect to a name resolving to any other non-public address', async () => {
    for (const [host] of LENIENT_REFUSED_ADDRESSES) {
      const address = host.replace(/^\[|\]$/g, '');
      for (const answers of [[address], ['127.0.0.1', address]]) {
        await expect(fetchVia(true, 'hooks.example.com', answering(...answers))).rejects.toThrow(
          new UrlNotAllowedError('hooks.example.com resolves to an address neither public nor loopback'),
        );
      }
      // The system resolver, given the address itself, answers with it: refused all the same.
      const refused = await new Promise<unknown>((resolve) =>
        publicOnlyLookup(lenient)(address, {}, (err) => resolve(err)),
      );
      expect(refused).toBeInstanceOf(UrlNotAllowedError);
    }
  });

  it('answers in both lookup forms (one address, or all: true)', async () => {
    const lookup = publicOnlyLookup(lenient);
    const one = await new Promise<unknown[]>((resolve, reject) =>
      lookup('localhost', { family: 4 }, (err, address, family) =>
        err ? reject(err) : resolve([address, family]),
      ),
    );
    expect(one).toEqual(['127.0.0.1', 4]);
    const all = await new Promise<unknown>((resolve, reject) =>
      lookup('localhost', { family: 4, all: true }, (err, addresses) =>
        err ? reject(err) : resolve(addresses),
      ),
    );
    expect(all).toEqual([{ address: '127.0.0.1', family: 4 }]);
  });
});

describe('ALLOW_PRIVATE_URLS in the configuration', () => {
  const base = {
    REDIS_URL: 'redis://127.0.0.1:6379',
    MONGODB_URI: 'mongodb://127.0.0.1:27017/intake',
    ADMIN_API_KEY: 'adm_0123456789abcdefghijklmnop',
    SESSION_SECRET: '0123456789abcdef0123456789abcdef',
    SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
  };
  it('defaults to false, reads true and false, and refuses anything else naming the variable', () => {
    expect(loadConfig(base).allowPrivateUrls).toBe(false);
    expect(loadConfig({ ...base, ALLOW_PRIVATE_URLS: 'true' }).allowPrivateUrls).toBe(true);
    expect(loadConfig({ ...base, ALLOW_PRIVATE_URLS: 'false' }).allowPrivateUrls).toBe(false);
    expect(() => loadConfig({ ...base, ALLOW_PRIVATE_URLS: 'yes' })).toThrow(/ALLOW_PRIVATE_URLS/);
  });
});

describe('firm settings: URLs the service calls (a stack without ALLOW_PRIVATE_URLS)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { ALLOW_PRIVATE_URLS: 'false' } });
  });
  afterAll(async () => stack?.stop());

  /** The settings as stored, their sealed secrets opened (docs/operations.md#secrets-at-rest). */
  const stored = async (slug: string): Promise<any> =>
    openSettings(
      stack.services.mongo.db,
      slug,
      (await stack.services.mongo.db.collection('firms').findOne({ _id: slug as never }))!.settings,
    );

  it.each(REFUSED_URLS)(
    'refuses %s as slack_webhook_url and crm.base_url with 400 url_not_allowed',
    async (url) => {
      const firm = await createFirm(stack);
      const before = await stored(firm.slug);
      for (const [settings, path] of [
        [{ slack_webhook_url: url }, '/settings/slack_webhook_url'],
        [
          { crm: { provider: 'clio', access_token: 'clio-token-1', base_url: url } },
          '/settings/crm/base_url',
        ],
      ] as const) {
        for (const client of [firm.client, stack.admin]) {
          const res = await client.patch(`/api/firms/${firm.slug}`, { settings });
          expect(expectError(res, 400, 'url_not_allowed')).toEqual([{ path, message: expect.any(String) }]);
        }
        const created = await stack.admin.post('/api/firms', { slug: `u-${firm.slug}`, name: 'U', settings });
        expect(expectError(created, 400, 'url_not_allowed')).toEqual([{ path, message: expect.any(String) }]);
      }
      expect(await stored(firm.slug)).toEqual(before);
      expect((await stack.admin.get(`/api/firms/u-${firm.slug}`)).status).toBe(404);
    },
  );

  it('accepts a public https:// URL for both', async () => {
    const firm = await createFirm(stack);
    const res = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: {
        slack_webhook_url: SLACK_WEBHOOK_URL,
        crm: { provider: 'clio', access_token: 'clio-token-1', base_url: 'https://eu.app.clio.com' },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.settings.slack_webhook_url).toBe(SLACK_WEBHOOK_URL);
    expect((await stored(firm.slug)).crm.base_url).toBe('https://eu.app.clio.com');
  });
});

describe('firm settings: the Clio token goes only where it went before', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  const MASK = '********';
  /** The settings as stored, their sealed secrets opened (docs/operations.md#secrets-at-rest). */
  const stored = async (slug: string): Promise<any> =>
    openSettings(
      stack.services.mongo.db,
      slug,
      (await stack.services.mongo.db.collection('firms').findOne({ _id: slug as never }))!.settings,
    );

  it("a union's details name only the branch meant: a Clio CRM without its token, a window with a bad start", async () => {
    const firm = await createFirm(stack);
    const noToken = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', base_url: 'https://eu.app.clio.com' } },
    });
    expect(expectError(noToken, 400, 'invalid_request')).toEqual([
      { path: '/settings/crm/access_token', message: 'is required' },
    ]);
    const badStart = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { calling_window: { start: '9am', end: '17:00', days: [1, 2, 3, 4, 5] } },
    });
    const paths = expectError(badStart, 400, 'invalid_request').map((d) => d.path);
    expect(paths).toEqual(['/settings/calling_window/start']);
  });

  it('the mask with a new crm.base_url is a 400 at /settings/crm/access_token, and nothing changes', async () => {
    const token = 'clio-secret-token';
    const firm = await createFirm(stack, {
      crm: { provider: 'clio', access_token: token, base_url: 'https://app.clio.com' },
    });
    const before = await stored(firm.slug);
    for (const crm of [
      { provider: 'clio', access_token: MASK, base_url: 'https://attacker.example' },
      { provider: 'clio', access_token: MASK, base_url: 'http://127.0.0.1:9/' },
      { provider: 'clio', access_token: MASK }, // dropping base_url moves it to CLIO_BASE_URL
    ]) {
      const res = await firm.client.patch(`/api/firms/${firm.slug}`, { settings: { crm } });
      expect(expectError(res, 400, 'invalid_request')).toEqual([
        { path: '/settings/crm/access_token', message: expect.any(String) },
      ]);
    }
    expect(await stored(firm.slug)).toEqual(before);

    // The same base_url with the mask keeps the token; a new base_url with the token itself is fine.
    const same = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: MASK, base_url: 'https://app.clio.com' } },
    });
    expect(same.status).toBe(200);
    expect((await stored(firm.slug)).crm).toEqual(before.crm);
    const moved = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: 'new-token', base_url: 'https://eu.app.clio.com' } },
    });
    expect(moved.status).toBe(200);
    expect((await stored(firm.slug)).crm).toEqual({
      provider: 'clio',
      access_token: 'new-token',
      base_url: 'https://eu.app.clio.com',
    });
  });

  it('with ALLOW_PRIVATE_URLS=true (this stack) a non-public address other than loopback is still 400 url_not_allowed', async () => {
    const firm = await createFirm(stack);
    const before = await stored(firm.slug);
    for (const [host] of LENIENT_REFUSED_ADDRESSES) {
      const url = `http://${host}/latest`;
      for (const [settings, path] of [
        [{ slack_webhook_url: url }, '/settings/slack_webhook_url'],
        [
          { crm: { provider: 'clio', access_token: 'clio-token-1', base_url: url } },
          '/settings/crm/base_url',
        ],
        [
          { booking: { provider: 'calcom', api_key: 'cal-key-1', event_type_id: 1, base_url: url } },
          '/settings/booking/base_url',
        ],
      ] as const) {
        const res = await firm.client.patch(`/api/firms/${firm.slug}`, { settings });
        expect(expectError(res, 400, 'url_not_allowed')).toEqual([
          { path, message: 'is not a public or loopback address' },
        ]);
      }
      const endpoint = await firm.client.post('/api/webhook-endpoints', {
        firmSlug: firm.slug,
        url,
        events: ['*'],
      });
      expect(expectError(endpoint, 400, 'url_not_allowed')).toEqual([
        { path: '/url', message: 'is not a public or loopback address' },
      ]);
    }
    expect(await stored(firm.slug)).toEqual(before);
    const endpoints = await firm.client.get(`/api/webhook-endpoints?firmSlug=${firm.slug}`);
    expect(endpoints.status).toBe(200);
    expect(endpoints.body.endpoints).toEqual([]);
  });

  it('with ALLOW_PRIVATE_URLS=true (this stack) http:// to 127.0.0.1 is stored', async () => {
    const firm = await createFirm(stack, {
      slack_webhook_url: 'http://127.0.0.1:4010/slack',
      crm: { provider: 'clio', access_token: 't', base_url: 'http://127.0.0.1:4011' },
    });
    expect((await stored(firm.slug)).slack_webhook_url).toBe('http://127.0.0.1:4010/slack');
    // Still refused as written: other schemes and credentials in the URL.
    const res = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { slack_webhook_url: 'file:///etc/passwd' },
    });
    expectError(res, 400, 'url_not_allowed');
  });
});
