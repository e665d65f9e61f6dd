// URLs the service calls for a firm (slack_webhook_url,
// crm.base_url) are https:// to a public address, checked when stored and when called
// (core/platform/url-policy.ts); the write-only Clio token cannot be sent to a new base_url
// without sending it again. ALLOW_PRIVATE_URLS=true lifts the address rule for local runs.
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
} from '../../core/platform/url-policy.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { REFUSED_URLS, SLACK_WEBHOOK_URL } from '../helpers/url-samples.js';

const strict = { allowPrivate: false };
const lenient = { allowPrivate: true };

describe('assertResolvesToPublic with the system resolver', () => {
  it('refuses a host that resolves to loopback (localhost) unless private URLs are allowed', async () => {
    await expect(assertResolvesToPublic('https://localhost/', strict)).rejects.toBeInstanceOf(
      UrlNotAllowedError,
    );
    await expect(assertResolvesToPublic('https://localhost/', lenient)).resolves.toBeUndefined();
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

  const fetchVia = (allowPrivate: boolean) =>
    new Promise<string>((resolve, reject) => {
      const agent = new Agent({ lookup: publicOnlyLookup({ allowPrivate }) });
      const req = get({ host: 'localhost', port, path: '/', agent, family: 4 }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.on('close', () => agent.destroy());
    });

  it('refuses to connect to a host that resolves to 127.0.0.1', async () => {
    await expect(fetchVia(false)).rejects.toBeInstanceOf(UrlNotAllowedError);
  });

  it('connects with private URLs allowed', async () => {
    await expect(fetchVia(true)).resolves.toBe('reached');
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
