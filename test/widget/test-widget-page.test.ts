// GET /api/test-widget over HTTP (docs/widget.md): who may open it, what it mints, its headers,
// its validation, how each query value is escaped in the served HTML, and the widget's files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { signWidgetToken, WIDGET_TOKEN_TTL_SECONDS } from '../../core/domain/access/widget-token.js';
import type { ApiResponse } from '../helpers/client.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { jwtClaims, pageConfig } from './widget-helpers.js';
import { createWidgetKey } from './widget-key-helpers.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
let firmB: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack();
  const a = await createFirm(stack);
  const b = await createFirm(stack);
  firmA = { ...a, agentId: (await createAgent(a.client, a.slug)).agent_id };
  firmB = { ...b, agentId: (await createAgent(b.client, b.slug)).agent_id };
});
afterAll(async () => stack?.stop());

const PAGE = '/api/test-widget';
const basic = (password: string) => `Basic ${Buffer.from(`someone:${password}`).toString('base64')}`;
const page = (query: Record<string, string>, headers?: Record<string, string>) =>
  stack.admin.get(`${PAGE}?${new URLSearchParams(query).toString()}`, headers);

function expectHtmlPage(res: ApiResponse): void {
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
}

describe('who may open the page', () => {
  it('no credentials: 401 with a Bearer and a Basic challenge, so a browser asks for a key', async () => {
    const res = await stack.api.get(PAGE);
    expectError(res, 401, 'unauthorized');
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer, Basic realm="[^"]+"/);
    expect(res.text).not.toContain('iwt_');
  });

  it('a bad token, as bearer or as basic-auth password: 401', async () => {
    expectError(await stack.api.withToken('nonsense').get(PAGE), 401, 'unauthorized');
    expectError(await stack.api.get(PAGE, { Authorization: basic('nonsense') }), 401, 'unauthorized');
  });

  it("a firm key opens its own firm's page, as bearer or as basic-auth password; another firm's: 403", async () => {
    const asBearer = await firmA.client.get(PAGE);
    expectHtmlPage(asBearer);
    expect(pageConfig(asBearer.text)).toMatchObject({ state: 'ready', firmSlug: firmA.slug });
    const asBasic = await stack.api.get(`${PAGE}?firmSlug=${firmA.slug}`, {
      Authorization: basic(firmA.key),
    });
    expectHtmlPage(asBasic);
    expect(pageConfig(asBasic.text).firmSlug).toBe(firmA.slug);
    expectError(await firmA.client.get(`${PAGE}?firmSlug=${firmB.slug}`), 403, 'forbidden');
    expectError(
      await firmA.client.get(`${PAGE}?firmSlug=${firmA.slug}&agentId=${firmB.agentId}`),
      404,
      'agent_not_found',
    );
  });

  it('the platform key opens any firm; an unknown firm or agent is a 404 and mints nothing', async () => {
    const res = await page({ firmSlug: firmB.slug, agentId: firmB.agentId });
    expectHtmlPage(res);
    expect(pageConfig(res.text)).toMatchObject({ state: 'ready', firmSlug: firmB.slug });
    const unknownFirm = await page({ firmSlug: 'no-such-firm' });
    expectError(unknownFirm, 404, 'firm_not_found');
    const unknownAgent = await page({ firmSlug: firmB.slug, agentId: 'agent_nope' });
    expectError(unknownAgent, 404, 'agent_not_found');
    expect(unknownFirm.text + unknownAgent.text).not.toContain('iwt_');
  });

  it('a widget token cannot open the page (it would mint its own successor): 403', async () => {
    const token = pageConfig((await firmA.client.get(PAGE)).text).token!;
    expectError(await stack.api.withToken(token).get(PAGE), 403, 'forbidden');
    expectError(await stack.api.withToken(token).get(`${PAGE}?firmSlug=${firmA.slug}`), 403, 'forbidden');
    expectError(await stack.api.get(PAGE, { Authorization: basic(token) }), 403, 'forbidden');
  });
});

describe('what the page holds', () => {
  it("a widget token of the firm that lives one hour, and the firm's agents with the chosen one", async () => {
    const second = await createAgent(firmA.client, firmA.slug, { agent_name: 'Second agent' });
    const before = Math.floor(Date.now() / 1000);
    const res = await page({ firmSlug: firmA.slug, agentId: firmA.agentId });
    const config = pageConfig(res.text);
    expect(config.token).toMatch(/^iwt_[\w-]+\.[\w-]+\.[\w-]+$/);
    const claims = jwtClaims(config.token!);
    expect(claims).toMatchObject({ typ: 'widget', firm: firmA.slug });
    expect((claims.exp as number) - (claims.iat as number)).toBe(WIDGET_TOKEN_TTL_SECONDS);
    expect(claims.iat as number).toBeGreaterThanOrEqual(before);
    expect(new Date(config.tokenExpiresAt!).getTime()).toBe((claims.exp as number) * 1000);
    expect(config.agents!.map((a) => a.id).sort()).toEqual([firmA.agentId, second.agent_id].sort());
    expect(config.settings!.agentId).toBe(firmA.agentId);
    // Without agentId: the newest agent.
    expect(pageConfig((await page({ firmSlug: firmA.slug })).text).settings!.agentId).toBe(second.agent_id);
    // Two loads, two tokens.
    expect(pageConfig((await page({ firmSlug: firmA.slug })).text).token).not.toBe(config.token);
  });

  it('defaults, and the settings as given', async () => {
    const defaults = pageConfig((await page({ firmSlug: firmB.slug })).text).settings;
    expect(defaults).toEqual({
      agentId: firmB.agentId,
      title: 'Chat with us',
      greeting: 'Hi! How can we help you today?',
      primaryColor: '#1d4ed8',
      position: 'right',
    });
    const given = {
      title: 'Talk to Smith & Co',
      greeting: 'Hello there',
      primaryColor: '#AA3300',
      position: 'left',
    };
    const res = await page({ firmSlug: firmB.slug, ...given });
    expect(pageConfig(res.text).settings).toEqual({
      ...given,
      agentId: firmB.agentId,
      primaryColor: '#aa3300',
    });
    expect(res.text).toContain('value="Talk to Smith &amp; Co"');
    expect(res.text).toContain('id="cfg-position-left" checked');
  });

  it('the platform without firmSlug or agentId: a page that says what to pass, and no token', async () => {
    const res = await stack.admin.get(PAGE);
    expectHtmlPage(res);
    expect(pageConfig(res.text)).toEqual({ state: 'needs_firm' });
    expect(res.text).toContain('data-state="needs_firm"');
    expect(res.text).toContain('?firmSlug=&lt;slug&gt;');
    expect(res.text).not.toContain('iwt_');
    // agentId alone names the firm too; an unknown one is a 404.
    const byAgent = pageConfig((await page({ agentId: firmB.agentId })).text);
    expect(byAgent).toMatchObject({
      state: 'ready',
      firmSlug: firmB.slug,
      settings: { agentId: firmB.agentId },
    });
    expectError(await page({ agentId: 'agent_nope' }), 404, 'agent_not_found');
  });

  it('a firm without agents: a page that says to create one, and no token', async () => {
    const empty = await createFirm(stack);
    const res = await empty.client.get(PAGE);
    expectHtmlPage(res);
    expect(pageConfig(res.text)).toEqual({ state: 'no_agents' });
    expect(res.text).toContain('POST /api/v2/create-agent');
    expect(res.text).not.toContain('iwt_');
  });
});

describe('response headers', () => {
  it('a CSP with a fresh nonce per response on both scripts, nothing inline, nothing remote', async () => {
    const first = await page({ firmSlug: firmA.slug });
    const second = await page({ firmSlug: firmA.slug });
    const nonces = [first, second].map((res) => {
      const csp = res.headers.get('content-security-policy') ?? '';
      const directives = new Map(
        csp.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name!, values];
        }),
      );
      expect(directives.get('default-src')).toEqual(["'none'"]);
      expect(directives.get('connect-src')).toEqual(["'self'"]);
      expect(directives.get('base-uri')).toEqual(["'none'"]);
      expect(directives.get('form-action')).toEqual(["'none'"]);
      expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
      expect(directives.get('style-src')).toEqual(["'self'"]);
      const scriptSrc = directives.get('script-src')!;
      expect(scriptSrc).toHaveLength(1);
      const nonce = /^'nonce-([A-Za-z0-9+/=]{16,})'$/.exec(scriptSrc[0]!)![1]!;
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
      // Every executable script carries this response's nonce and comes from this origin.
      const scripts = [...res.text.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]!);
      const executable = scripts.filter((attrs) => !attrs.includes('type="application/json"'));
      expect(executable).toHaveLength(2);
      for (const attrs of executable) {
        expect(attrs).toContain(`nonce="${nonce}"`);
        expect(attrs).toMatch(/src="\/widget\/v\/[0-9a-f]{16}\/[a-z-]+\.js"/);
      }
      return nonce;
    });
    expect(nonces[0]).not.toBe(nonces[1]);
    for (const res of [first, second]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      // No inline event handlers, style attributes or remote references anywhere in the page.
      expect(res.text).not.toMatch(/\son[a-z]+\s*=|\sstyle\s*=|(?:src|href)="(?:https?:)?\/\//i);
    }
  });
});

describe('validation', () => {
  it('a malformed colour, position, firm slug, agent id, or an overlong title or greeting: 400 with details', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ primaryColor: 'red' }, '/primaryColor'],
      [{ primaryColor: '#12345' }, '/primaryColor'],
      [{ primaryColor: '#1234567' }, '/primaryColor'],
      [{ position: 'top' }, '/position'],
      [{ firmSlug: 'Not A Slug' }, '/firmSlug'],
      [{ agentId: 'agent x' }, '/agentId'],
      [{ title: 'x'.repeat(101) }, '/title'],
      [{ greeting: 'x'.repeat(1001) }, '/greeting'],
    ];
    for (const [query, pointer] of cases) {
      const res = await page({ firmSlug: firmA.slug, ...query });
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toEqual([pointer]);
    }
    // A repeated parameter is not a string either.
    expectError(
      await stack.admin.get(`${PAGE}?firmSlug=${firmA.slug}&title=a&title=b`),
      400,
      'invalid_request',
    );
  });
});

const PAYLOADS = [
  '"><script>window.__xss=1</script>',
  '\'><img src=x onerror="window.__xss=1">',
  'javascript:window.__xss=1',
  '</script><script>window.__xss=1</script><!--',
  '{{nonce}}<style>*{}</style>',
];

describe('every query value is escaped or refused (the served HTML)', () => {
  it('title and greeting: shown as text in every place, never as markup', async () => {
    for (const name of ['title', 'greeting']) {
      for (const payload of PAYLOADS) {
        const res = await page({ firmSlug: firmA.slug, [name]: payload });
        expectHtmlPage(res);
        expect(pageConfig(res.text).settings![name as 'title']).toBe(payload);
        if (/[<>"']/.test(payload)) expect(res.text).not.toContain(payload);
        expect(res.text).not.toMatch(/<img|<style|__xss=1<\/script>|<script>window/i);
        // No value becomes a link or a script address: the page's links lead with its own path.
        expect(res.text).not.toMatch(/(?:href|src)="\s*javascript:/i);
        // The page's own markup is intact: the same elements as without the payload.
        const tags = (html: string) => [...html.matchAll(/<([a-z0-9]+)\b/gi)].map((m) => m[1]!.toLowerCase());
        const plain = await page({ firmSlug: firmA.slug, [name]: 'plain text' });
        expect(tags(res.text)).toEqual(tags(plain.text));
        // The settings block holds no character that could close it.
        const block = /id="intake-widget-config">([\s\S]*?)<\/script>/.exec(res.text)![1]!;
        expect(block).not.toMatch(/[<>]/);
      }
    }
  });

  it('firmSlug, agentId, primaryColor and position: refused with 400, the value never echoed', async () => {
    for (const name of ['firmSlug', 'agentId', 'primaryColor', 'position']) {
      for (const payload of PAYLOADS) {
        const query = name === 'firmSlug' ? { [name]: payload } : { firmSlug: firmA.slug, [name]: payload };
        const res = await page(query);
        expectError(res, 400, 'invalid_request');
        expect(res.text).not.toContain(payload);
        expect(res.text).not.toMatch(/<script|<img|javascript:/i);
      }
    }
  });
});

describe('widget tokens that must not work', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const chat = (token: string) =>
    stack.api.withToken(token).post('/api/v2/create-chat', { agentId: firmA.agentId, firmSlug: firmA.slug });

  it('a genuine one opens a chat; an expired, over-long, future, forged or re-prefixed one is a 401', async () => {
    const genuine = pageConfig((await firmA.client.get(PAGE)).text).token!;
    expect((await chat(genuine)).status).toBe(200);
    const secret = stack.config.sessionSecret;
    const claims = { firm: firmA.slug, subject: 'wgt_test' };
    const refused = [
      await signWidgetToken({ ...claims, issuedAt: now() - 7200, expiresAt: now() - 10 }, secret),
      await signWidgetToken(
        { ...claims, issuedAt: now(), expiresAt: now() + WIDGET_TOKEN_TTL_SECONDS + 1 },
        secret,
      ),
      await signWidgetToken({ ...claims, issuedAt: now() + 600, expiresAt: now() + 1200 }, secret),
      await signWidgetToken(
        { ...claims, issuedAt: now(), expiresAt: now() + 60 },
        'another-secret-of-32-characters!!',
      ),
      `${genuine.slice(0, -4)}AAAA`,
      genuine.replace(/^iwt_/, ''), // a widget token is no session token
      // nor is a session token a widget token
      `iwt_${await signSessionToken({ firm: firmA.slug, sub: 'user' }, secret, 600)}`,
    ];
    for (const token of refused) expectError(await chat(token), 401, 'unauthorized');
  });

  it('revoke-sessions for the firm ends its widget tokens', async () => {
    const other = await createFirm(stack);
    const agent = await createAgent(other.client, other.slug);
    const token = pageConfig((await other.client.get(PAGE)).text).token!;
    const open = () =>
      stack.api
        .withToken(token)
        .post('/api/v2/create-chat', { agentId: agent.agent_id, firmSlug: other.slug });
    expect((await open()).status).toBe(200);
    expect((await other.client.post('/api/auth/revoke-sessions', { firmSlug: other.slug })).status).toBe(200);
    expectError(await open(), 401, 'unauthorized');
  });
});

describe('the snippet panel', () => {
  it("without a widget key, a snippet with a placeholder and how to create one; then the newest key's snippet", async () => {
    const firm = await createFirm(stack);
    await createAgent(firm.client, firm.slug);
    const before = (await firm.client.get(PAGE)).text;
    expect(before).toContain('data-snippet-state="no-key"');
    expect(before).toContain('This firm has no widget key yet');
    // The snippet is there all the same, naming a placeholder that is plainly no key.
    const placeholder = /<code id="tw-snippet">([^<]*)<\/code>/.exec(before)![1]!;
    expect(placeholder).toMatch(
      /^&lt;script src=&quot;.+ data-key=&quot;YOUR_WIDGET_KEY&quot; data-agent-id=/,
    );
    expect(pageConfig(before)).toMatchObject({ widgetKey: null, snippetKey: 'YOUR_WIDGET_KEY' });

    await createWidgetKey(firm.client, firm.slug, { name: 'Old site' });
    const key = await createWidgetKey(firm.client, firm.slug, { name: 'New site' });
    const after = (await firm.client.get(`${PAGE}?title=${encodeURIComponent('A & B')}`)).text;
    expect(after).toContain('data-snippet-state="key"');
    expect(after).toContain('<strong>New site</strong>');
    const snippet = /<code id="tw-snippet">([^<]*)<\/code>/.exec(after)![1]!;
    const version = /\/widget\/v\/([0-9a-f]{16})\/widget\.js/.exec(after)![1]!;
    const integrity = (await stack.admin.get(`/api/widget-keys/${key.id}/snippet`)).body.integrity as string;
    // Escaped as text in the page: the tag a person copies, with the title escaped once more inside.
    expect(snippet).toBe(
      `&lt;script src=&quot;${stack.baseUrl}/widget/v/${version}/widget.js&quot; integrity=&quot;${integrity}&quot; ` +
        `crossorigin=&quot;anonymous&quot; data-key=&quot;${key.key}&quot; data-agent-id=&quot;${pageConfig(after).settings!.agentId}&quot; ` +
        `data-title=&quot;A &amp;amp; B&quot; data-greeting=&quot;Hi! How can we help you today?&quot; ` +
        `data-primary-color=&quot;#1d4ed8&quot; data-position=&quot;right&quot; async&gt;&lt;/script&gt;`,
    );
  });
});

describe("the widget's files", () => {
  it('served at their version with their content types, cached for good; the latest briefly', async () => {
    const html = (await page({ firmSlug: firmA.slug })).text;
    const urls = [...html.matchAll(/(?:src|href)="(\/widget\/[^"]+)"/g)].map((m) => m[1]!);
    expect(urls.map((u) => u.replace(/^\/widget\/v\/[0-9a-f]{16}\//, '/widget/')).sort()).toEqual(
      ['/widget/test-widget.css', '/widget/test-widget.js', '/widget/widget.js'].sort(),
    );
    for (const url of urls) {
      const res = await stack.api.get(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(
        url.endsWith('.css') ? 'text/css; charset=utf-8' : 'application/javascript; charset=utf-8',
      );
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const etag = res.headers.get('etag')!;
      // A browser's revalidation (fetch would add Cache-Control: no-cache to a bare If-None-Match).
      const again = await stack.api.get(url, { 'If-None-Match': etag, 'Cache-Control': 'max-age=0' });
      expect(again.status).toBe(304);
    }
    const latest = await stack.api.get('/widget/widget.js');
    expect(latest.headers.get('cache-control')).toBe('public, max-age=300');
    expect(latest.text).toContain('window.IntakeWidget');
    // widget.css is served inside widget.js (a constructed stylesheet), not on its own.
    expect(latest.text).toContain('.iw-launcher');
    expect(latest.text).not.toContain("/*@widget.css*/ ''");
    expectError(await stack.api.get('/widget/v/0000000000000000/widget.js'), 404, 'widget_version_not_found');
    expectError(await stack.api.get('/widget/v/nothex/widget.js'), 400, 'invalid_request');
  });

  it('any other name is a 404, never a file of the server; other methods a 405', async () => {
    const html = (await page({ firmSlug: firmA.slug })).text;
    const version = /\/widget\/v\/([0-9a-f]{16})\/widget\.js/.exec(html)![1]!;
    const cssPath = /\/widget\/v\/[0-9a-f]{16}\/test-widget\.css/.exec(html)![0];
    for (const name of [
      'nope.js',
      'page.js',
      'assets.js',
      'page.ts',
      '__proto__',
      'test-widget.html',
      'widget.css',
      '..%2Fpage.ts',
    ]) {
      expectError(await stack.api.get(`/widget/${name}`), 404, 'route_not_found');
      expectError(await stack.api.get(`/widget/v/${version}/${name}`), 404, 'route_not_found');
    }
    const post = await stack.api.request('POST', '/widget/widget.js');
    expectError(post, 405, 'method_not_allowed');
    expect(post.headers.get('allow')).toMatch(/GET/);
    const head = await stack.api.request('HEAD', cssPath);
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });
});
