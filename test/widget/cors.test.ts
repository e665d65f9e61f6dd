// CORS over real HTTP (docs/authentication.md#cors): the widget routes answer the origins of the
// key or token in use, their preflights any origin without a database read; every other route
// answers only CORS_ORIGINS (and nothing when it is unset); never credentials; never Bull Board.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { SignJWT } from 'jose';
import { signSessionToken } from '../../core/domain/access/session.js';
import { signWidgetToken } from '../../core/domain/access/widget-token.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, freshMongoUri, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { pageConfig } from './widget-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';

const DASHBOARD = 'https://dash.firm.example';
const SITE = 'https://firm.example';
const ELSEWHERE = 'https://evil.example';

let stack: Stack; // CORS_ORIGINS set
let bare: Stack; // CORS_ORIGINS unset
let firm: Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({
    env: { MONGODB_URI: uri.toString(), CORS_ORIGINS: `${DASHBOARD}, http://127.0.0.1:9` },
  });
  bare = await startStack();
  const made = await createFirm(stack);
  firm = { ...made, agentId: (await createAgent(made.client, made.slug)).agent_id };
});
afterAll(async () => {
  await bare?.stop();
  await stack?.stop();
});

/** A request as a browser sends it cross-origin. */
const send = (
  base: string,
  method: string,
  path: string,
  origin: string,
  init: { headers?: Record<string, string>; body?: unknown } = {},
) =>
  fetch(`${base}${path}`, {
    method,
    headers: {
      Origin: origin,
      ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

/** The preflight a browser sends before a cross-origin request with these headers. */
const preflight = (base: string, path: string, origin: string, method = 'POST') =>
  fetch(`${base}${path}`, {
    method: 'OPTIONS',
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': method,
      'Access-Control-Request-Headers': 'authorization,content-type',
    },
  });

/** The CORS headers of a response, for exact comparison. */
const corsHeaders = (res: Response) =>
  Object.fromEntries(
    [...res.headers.entries()].filter(([name]) => name.startsWith('access-control-') || name === 'vary'),
  );

const ALLOWED_PREFLIGHT = (origin: string) => ({
  'access-control-allow-origin': origin,
  'access-control-allow-methods': 'GET,POST,PUT,PATCH,DELETE',
  'access-control-allow-headers': 'Authorization,Content-Type,Idempotency-Key',
  'access-control-max-age': '600',
  vary: 'Origin',
});
const ALLOWED_RESPONSE = (origin: string) => ({
  'access-control-allow-origin': origin,
  'access-control-expose-headers': 'Retry-After,X-Next-Cursor,X-Request-Id',
  vary: 'Origin',
});

/** The MongoDB commands the in-process web process sends while `run` runs. */
async function mongoCommands(run: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (e: CommandStartedEvent) => seen.push(e.commandName);
  stack.services.mongo.client.on('commandStarted', listener);
  try {
    await run();
  } finally {
    stack.services.mongo.client.off('commandStarted', listener);
  }
  return seen;
}

describe('the widget routes', () => {
  const WIDGET_PATHS = [
    ['/api/widget/session', 'POST'],
    ['/api/widget/challenge?key=iwpk_x', 'GET'],
    ['/api/v2/create-chat', 'POST'],
    ['/api/v2/chat-completion', 'POST'],
    ['/api/v2/end-chat', 'POST'],
    ['/api/v2/get-chat/chat_x', 'GET'],
  ] as const;

  it('a preflight from any origin: 204 with the methods and headers, no credentials, no database read', async () => {
    const commands = await mongoCommands(async () => {
      for (const [path, method] of WIDGET_PATHS) {
        for (const origin of [SITE, ELSEWHERE]) {
          const res = await preflight(stack.baseUrl, path, origin, method);
          expect(res.status, `${method} ${path}`).toBe(204);
          expect(corsHeaders(res), `${method} ${path}`).toEqual(ALLOWED_PREFLIGHT(origin));
        }
      }
    });
    expect(commands).toEqual([]);
  });

  it("session: the key's origins only; the refusal carries no CORS headers", async () => {
    const key = await createWidgetKey(firm.client, firm.slug);
    const ok = await send(stack.baseUrl, 'POST', '/api/widget/session', SITE, { body: { key: key.key } });
    expect(ok.status).toBe(200);
    expect(corsHeaders(ok)).toEqual(ALLOWED_RESPONSE(SITE));
    const refused = await send(stack.baseUrl, 'POST', '/api/widget/session', ELSEWHERE, {
      body: { key: key.key },
    });
    expect(refused.status).toBe(403);
    expect(corsHeaders(refused)).toEqual({ vary: 'Origin' });
    const unknown = await send(stack.baseUrl, 'POST', '/api/widget/session', SITE, {
      body: { key: 'iwpk_nope' },
    });
    expect(unknown.status).toBe(401);
    expect(corsHeaders(unknown)['access-control-allow-origin']).toBeUndefined();
  });

  it("challenge: the key's origins only", async () => {
    const key = await createWidgetKey(firm.client, firm.slug, { challenge: 'altcha' });
    const path = `/api/widget/challenge?key=${key.key}`;
    const ok = await send(stack.baseUrl, 'GET', path, SITE);
    expect(ok.status).toBe(200);
    expect(corsHeaders(ok)).toEqual(ALLOWED_RESPONSE(SITE));
    const refused = await send(stack.baseUrl, 'GET', path, ELSEWHERE);
    expect(refused.status).toBe(403);
    expect(corsHeaders(refused)).toEqual({ vary: 'Origin' });
  });

  it("chat routes: the token's origin only; a test-page token (no origin) answers none", async () => {
    const key = await createWidgetKey(firm.client, firm.slug, { agent_id: firm.agentId });
    const { body } = await askSession(stack.api, SITE, { key: key.key });
    const auth = { Authorization: `Bearer ${body.token}` };
    const chat = { firmSlug: firm.slug, agentId: firm.agentId };
    const ok = await send(stack.baseUrl, 'POST', '/api/v2/create-chat', SITE, { headers: auth, body: chat });
    expect(ok.status).toBe(200);
    expect(corsHeaders(ok)).toEqual(ALLOWED_RESPONSE(SITE));
    const chatId = ((await ok.json()) as { chat_id: string }).chat_id;
    const read = await send(stack.baseUrl, 'GET', `/api/v2/get-chat/${chatId}`, SITE, { headers: auth });
    expect(read.status).toBe(200);
    expect(corsHeaders(read)).toEqual(ALLOWED_RESPONSE(SITE));
    const other = await send(stack.baseUrl, 'POST', '/api/v2/create-chat', ELSEWHERE, {
      headers: auth,
      body: chat,
    });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('origin_not_allowed');
    expect(corsHeaders(other)).toEqual({ vary: 'Origin' });

    const page = await firm.client.get(`/api/test-widget?agentId=${firm.agentId}`);
    const pageToken = pageConfig(page.text).token!;
    const fromPage = await send(stack.baseUrl, 'POST', '/api/v2/create-chat', SITE, {
      headers: { Authorization: `Bearer ${pageToken}` },
      body: chat,
    });
    expect(fromPage.status).toBe(200);
    expect(corsHeaders(fromPage)).toEqual({ vary: 'Origin' });
  });

  it("an expired key token's 401 is readable from its origin (the widget renews on it), from no other", async () => {
    const key = await createWidgetKey(firm.client, firm.slug, { agent_id: firm.agentId });
    const now = Math.floor(Date.now() / 1000);
    const expiredFor = (seconds: number, secret = stack.config.sessionSecret) =>
      signWidgetToken(
        {
          firm: firm.slug,
          subject: 'wgt_expired',
          issuedAt: now - seconds - 3600,
          expiresAt: now - seconds,
          binding: { key: key.key, origin: SITE, agent: firm.agentId },
        },
        secret,
      );
    const chat = { firmSlug: firm.slug, agentId: firm.agentId };
    const create = async (token: string, origin: string) => {
      const res = await send(stack.baseUrl, 'POST', '/api/v2/create-chat', origin, {
        headers: { Authorization: `Bearer ${token}` },
        body: chat,
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      return corsHeaders(res);
    };
    // An hour past its expiry, and the most of the week after it.
    expect(await create(await expiredFor(3600), SITE)).toEqual(ALLOWED_RESPONSE(SITE));
    expect(await create(await expiredFor(6 * 86_400), SITE)).toEqual(ALLOWED_RESPONSE(SITE));
    // Another origin, a token older than that, one signed with another secret: no CORS headers.
    expect(await create(await expiredFor(3600), ELSEWHERE)).toEqual({ vary: 'Origin' });
    expect(await create(await expiredFor(8 * 86_400), SITE)).toEqual({ vary: 'Origin' });
    expect(await create(await expiredFor(3600, 'another-secret-of-32-characters!!'), SITE)).toEqual({
      vary: 'Origin',
    });
  });

  it('a 429 from a widget route carries the origin and exposes Retry-After, so the widget can read it', async () => {
    const key = await createWidgetKey(firm.client, firm.slug);
    let last: Response | undefined;
    for (let i = 0; i <= stack.config.widgetSessionsPerAddressPerHour; i++) {
      last = await send(stack.baseUrl, 'POST', '/api/widget/session', SITE, { body: { key: key.key } });
    }
    expect(last!.status).toBe(429);
    expect(corsHeaders(last!)).toEqual(ALLOWED_RESPONSE(SITE));
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('every other route: CORS_ORIGINS', () => {
  /** Minted exactly as the README's example for a dashboard's backend does. */
  const sessionToken = async () => {
    const secret = new TextEncoder().encode(stack.config.sessionSecret);
    const claims = { firm: firm.slug, sub: 'dashboard-user' };
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt();
    return jwt.setExpirationTime('8h').sign(secret);
  };

  it('a dashboard origin in CORS_ORIGINS: preflight 204 allowing Authorization; the call answers its origin', async () => {
    const res = await preflight(stack.baseUrl, '/api/leads', DASHBOARD, 'GET');
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual(ALLOWED_PREFLIGHT(DASHBOARD));
    const token = await sessionToken();
    const list = await send(stack.baseUrl, 'GET', '/api/leads', DASHBOARD, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(list.status).toBe(200);
    expect(corsHeaders(list)).toEqual(ALLOWED_RESPONSE(DASHBOARD));
    const calls = await send(stack.baseUrl, 'POST', '/api/v2/list-calls', DASHBOARD, {
      headers: { Authorization: `Bearer ${token}` },
      body: { firmSlug: firm.slug },
    });
    expect(calls.status).toBe(200);
    expect(corsHeaders(calls)).toEqual(ALLOWED_RESPONSE(DASHBOARD));
    // An error answer too: the dashboard reads why.
    const unauthorized = await send(stack.baseUrl, 'GET', '/api/leads', DASHBOARD);
    expect(unauthorized.status).toBe(401);
    expect(corsHeaders(unauthorized)).toEqual(ALLOWED_RESPONSE(DASHBOARD));
  });

  it('a preflight from a dashboard origin to a path no route has: 404 route_not_found, without CORS headers', async () => {
    for (const path of ['/no/such/path', '/api/no-such-thing', '/api/v2/no-such-operation']) {
      for (const method of ['GET', 'POST']) {
        const res = await preflight(stack.baseUrl, path, DASHBOARD, method);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('route_not_found');
        expect(res.headers.get('access-control-allow-origin')).toBeNull();
        expect(res.headers.get('access-control-allow-methods')).toBeNull();
      }
    }
    // A path a route has is answered as before.
    expect((await preflight(stack.baseUrl, '/api/leads', DASHBOARD, 'GET')).status).toBe(204);
  });

  it('another origin: no CORS headers on the preflight nor on the call', async () => {
    const res = await preflight(stack.baseUrl, '/api/leads', ELSEWHERE, 'GET');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-headers')).toBeNull();
    const token = await sessionToken();
    const list = await send(stack.baseUrl, 'GET', '/api/leads', ELSEWHERE, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(corsHeaders(list)).toEqual({ vary: 'Origin' });
    // A widget key's origin is no dashboard: the key opens the widget routes only.
    const key = await createWidgetKey(firm.client, firm.slug);
    await askSession(stack.api, SITE, { key: key.key });
    expect(corsHeaders(await preflight(stack.baseUrl, '/api/leads', SITE, 'GET'))).toEqual({
      vary: 'Origin',
    });
  });

  it('CORS_ORIGINS unset: no CORS headers for any origin', async () => {
    for (const origin of [DASHBOARD, ELSEWHERE]) {
      const res = await preflight(bare.baseUrl, '/api/leads', origin, 'GET');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const list = await send(bare.baseUrl, 'GET', '/api/leads', origin, {
        headers: { Authorization: `Bearer ${bare.config.adminApiKey}` },
      });
      expect(corsHeaders(list)).toEqual({ vary: 'Origin' });
    }
  });

  it('never credentials, never a wildcard on the API', async () => {
    const res = await send(stack.baseUrl, 'GET', '/api/leads', DASHBOARD, {
      headers: { Authorization: `Bearer ${await sessionToken()}` },
    });
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
  });

  it('Bull Board never answers CORS, not even to a CORS_ORIGINS origin', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const pre = await preflight(stack.baseUrl, path, DASHBOARD, 'GET');
      expect(corsHeaders(pre), path).toEqual({});
      const get = await send(stack.baseUrl, 'GET', path, DASHBOARD, {
        headers: { Authorization: `Bearer ${stack.config.adminApiKey}` },
      });
      expect(corsHeaders(get), path).toEqual({});
    }
  });

  it("the widget's script is readable from any origin (embedded with crossorigin and SRI)", async () => {
    const res = await send(stack.baseUrl, 'GET', '/widget/widget.js', ELSEWHERE);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });
});

describe('a dashboard origin may use the widget routes too', () => {
  it('get-chat with a session token from a CORS_ORIGINS origin', async () => {
    const token = await signSessionToken({ firm: firm.slug, sub: 'u' }, stack.config.sessionSecret, 600);
    const res = await send(stack.baseUrl, 'GET', '/api/v2/get-chat/chat_none', DASHBOARD, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expectError(
      { status: res.status, body: await res.json(), text: '', headers: res.headers },
      404,
      'chat_not_found',
    );
    expect(corsHeaders(res)).toEqual(ALLOWED_RESPONSE(DASHBOARD));
  });
});
