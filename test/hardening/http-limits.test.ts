// What the API fuzzer (npm run fuzz) found: methods a route does not have, prototype names as
// asset names, deeply nested JSON, huge lists of problems, and request values echoed in errors.
// Each answer is a clear 4xx/501 in the error shape (docs/errors.md), never a 500.
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowOf, sendAnyMethod } from '../helpers/any-method.js';
import type { ApiResponse } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { deliveredCallEvents } from '../helpers/webhook-outbox.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack, { voice_webhook_secret: 'whsec_http_limits' });
});
afterAll(async () => stack?.stop());

const send = (method: string, path: string, options?: { headers?: Record<string, string>; body?: string }) =>
  sendAnyMethod(stack.baseUrl, method, path, options);

describe('a method a route does not have is 405 with Allow (unknown too), never 500', () => {
  it('TRACE, QUERY, PROPFIND on any known path, without a token: 405 method_not_allowed', async () => {
    for (const method of ['TRACE', 'QUERY', 'PROPFIND', 'PURGE']) {
      for (const path of ['/healthz', '/api/firms', '/api/v2/get-call/call_x']) {
        const res = await send(method, path);
        expectError(res, 405, 'method_not_allowed');
      }
    }
    // On a known path the answer names what the path does have.
    expect(allowOf(await send('TRACE', '/healthz'))).toEqual(['GET', 'HEAD']);
  });

  it('a method that is not HTTP at all (rejected by the HTTP parser) is a 501 in the error shape', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(stack.web.port, '127.0.0.1', () => {
        socket.write('FROBNICATE /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString('utf8')));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 501 /);
    expect(reply).toMatch(/\r\nContent-Type: application\/json/i);
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({
      error: { code: 'not_implemented', message: expect.any(String) },
    });
  });

  it('the same on a keep-alive connection that has already been answered (as fetch and browsers reuse them)', async () => {
    const replies = await new Promise<string[]>((resolve, reject) => {
      const socket = connect(stack.web.port, '127.0.0.1', () => {
        socket.write(`GET /api/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${firm.key}\r\n\r\n`);
      });
      let data = '';
      let first: string | undefined;
      socket.on('data', (c: Buffer) => {
        data += c.toString('utf8');
        if (first !== undefined) return;
        // The first answer whole (its Content-Length read), then the unparseable request.
        const headEnd = data.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)/i.exec(data)?.[1];
        if (headEnd < 0 || length === undefined || data.length < headEnd + 4 + Number(length)) return;
        first = data.slice(0, headEnd + 4 + Number(length));
        data = data.slice(first.length);
        socket.write('FROBNICATE /api/workflows HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      socket.on('close', () => resolve([first ?? '', data]));
      socket.on('error', reject);
    });
    expect(replies[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(replies[1]).toMatch(/^HTTP\/1\.1 501 /);
    expect(JSON.parse(replies[1]!.slice(replies[1]!.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'not_implemented', message: expect.any(String) },
    });
  });

  it('POST, PUT, PATCH, DELETE on /healthz: 405 method_not_allowed with Allow: GET, HEAD', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await send(method, '/healthz');
      expectError(res, 405, 'method_not_allowed');
      expect(allowOf(res)).toEqual(['GET', 'HEAD']);
    }
  });

  it('every route: each method it does not have is a 405 whose Allow lists the methods it has', async () => {
    const byPath = new Map<string, Set<string>>();
    for (const route of stack.web.app.routes) {
      const methods = byPath.get(route.path) ?? new Set<string>();
      methods.add(route.method);
      if (route.method === 'GET') methods.add('HEAD');
      byPath.set(route.path, methods);
    }
    expect(byPath.size).toBeGreaterThan(10);
    for (const [template, methods] of byPath) {
      const path = template.replace(/\{[^}]+\}/g, 'abc');
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        if (methods.has(method)) continue;
        const res = await send(method, path, {
          headers: { Authorization: 'Bearer nope' },
        });
        expectError(res, 405, 'method_not_allowed');
        expect(allowOf(res), `${method} ${path}`).toEqual([...methods].sort());
      }
    }
  });

  it('HEAD follows GET: 200 without a body; 401 without a token; 404 for no route', async () => {
    const health = await send('HEAD', '/healthz');
    expect(health.status).toBe(200);
    expect(health.text).toBe('');
    const voices = await send('HEAD', '/api/v2/list-voices');
    expect(voices.status).toBe(401);
    expect(voices.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await send('HEAD', '/no/such/path')).status).toBe(404);
  });

  it('OPTIONS on a known path: 2xx with Allow; on no route: 404 route_not_found', async () => {
    const health = await send('OPTIONS', '/healthz');
    expect([200, 204]).toContain(health.status);
    expect(allowOf(health)).toEqual(['GET', 'HEAD']);
    const firms = await send('OPTIONS', '/api/firms');
    expect([200, 204]).toContain(firms.status);
    expect(allowOf(firms)).toEqual(['POST']);
    expectError(await send('OPTIONS', '/no/such/path'), 404, 'route_not_found');
  });
});

describe('documentation assets are looked up by own name only', () => {
  it('__proto__, constructor, toString, hasOwnProperty, valueOf: 404 asset_not_found', async () => {
    for (const name of [
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'valueOf',
      '__defineGetter__',
    ]) {
      expectError(await stack.api.get(`/docs/assets/${name}`), 404, 'asset_not_found');
    }
    const css = await stack.api.get('/docs/assets/swagger-ui.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
  });
});

/** JSON text `depth` levels deep ({} is one level), built as text: no recursion anywhere. */
function nested(depth: number, open = '{"a":', leaf = '{}', close = '}'): string {
  return open.repeat(depth - 1) + leaf + close.repeat(depth - 1);
}

/** A call webhook body nested exactly `depth` levels: body (1) → call (2) → x ... */
function webhookBody(depth: number, kind: 'object' | 'array' = 'object'): string {
  const inner = kind === 'object' ? nested(depth - 2) : nested(depth - 2, '[', '[]', ']');
  return `{"event":"fuzz_probe","call":{"call_id":"c_${rand(4)}","x":${inner}}}`;
}

describe('JSON deeper than 64 levels is a 400, checked without recursion', () => {
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    send('POST', path, {
      body,
      headers: { 'Content-Type': 'application/json', ...headers },
    });
  const webhook = () => `/api/v2/${firm.slug}/webhook`;

  it('64 levels are accepted by a route that takes arbitrary objects (the call webhook)', async () => {
    for (const kind of ['object', 'array'] as const) {
      const res = await post(webhook(), webhookBody(64, kind), {
        Authorization: `Bearer ${firm.key}`,
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 200,
        body: { received: true },
      });
    }
  });

  it('65 levels are a 400 invalid_request that says so', async () => {
    for (const kind of ['object', 'array'] as const) {
      const res = await post(webhook(), webhookBody(65, kind), {
        Authorization: `Bearer ${firm.key}`,
      });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message).toMatch(/nested deeper than 64 levels/);
    }
  });

  it('is checked right after parsing: before validation and before the webhook signature', async () => {
    // A body that would fail validation: the depth is reported.
    const res = await post(webhook(), `{"unexpected":${nested(70)}}`, {
      Authorization: `Bearer ${firm.key}`,
    });
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.message).toMatch(/nested deeper than 64 levels/);
    // Without any credentials the body is never read: refused before parsing.
    expectError(await post(webhook(), `{"unexpected":${nested(70)}}`), 401, 'unauthorized');
    // A token route's own body.
    const firms = await stack.admin.request('POST', '/api/firms', {
      rawBody: `{"slug":"f-${rand(4)}","name":"Deep","settings":${nested(65)}}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(firms, 400, 'invalid_request');
    expect(firms.body.error.message).toMatch(/nested deeper than 64 levels/);
  });

  it('100,000 levels (objects or arrays): 400, no 500, and the process stays healthy', async () => {
    const bodies = [
      // What the fuzzer sent: a call_ended event whose call object is 100,000 levels deep.
      `{"event":"call_ended","call":{"call_id":"c_${rand(4)}","x":${nested(100_000)}}}`,
      webhookBody(100_000),
      webhookBody(100_000, 'array'),
    ];
    for (const body of bodies) {
      expectError(
        await post(webhook(), body, { Authorization: `Bearer ${firm.key}` }),
        400,
        'invalid_request',
      );
      expectError(await post(webhook(), body), 401, 'unauthorized'); // refused unread
    }
    const deepFirm = await stack.admin.request('POST', '/api/firms', {
      rawBody: `{"slug":"f-${rand(4)}","name":"Deep","settings":${nested(100_000)}}`,
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(deepFirm, 400, 'invalid_request');
    expect((await stack.api.get('/healthz')).status).toBe(200);
    expect((await stack.api.get('/readyz')).status).toBe(200);
  });
});

describe('details lists at most 50 problems; the message says how many more', () => {
  it('10,000 unknown keys: 400 with exactly 50 details, the remaining count, and a small response', async () => {
    const body: Record<string, unknown> = {
      slug: `f-${rand(4)}`,
      name: 'Many keys',
    };
    for (let i = 0; i < 10_000; i++) body[`unknown_${i}`] = i;
    const res = await stack.admin.post('/api/firms', body);
    const details = expectError(res, 400, 'invalid_request');
    expect(details).toHaveLength(50);
    expect(details[0]).toEqual({
      path: '/unknown_0',
      message: 'is not an allowed field',
    });
    expect(res.body.error.message).toMatch(/9,950 more/);
    expect(res.text.length).toBeLessThan(8_000);
  });

  it('the fuzzer’s 1.9 MB body of 176,024 unknown keys gets a small answer', async () => {
    const parts: string[] = [];
    for (let i = 0; i < 176_024; i++) parts.push(`"k${i}":1`);
    const rawBody = `{${parts.join(',')}}`;
    expect(rawBody.length).toBeGreaterThan(1_800_000);
    const res = await stack.admin.request('POST', '/api/firms', {
      rawBody,
      headers: { 'Content-Type': 'application/json' },
    });
    const details = expectError(res, 400, 'invalid_request');
    expect(details).toHaveLength(50);
    // 176,024 unknown fields and the two missing required ones (slug, name).
    expect(res.body.error.message).toMatch(/175,976 more/);
    expect(res.text.length).toBeLessThan(8_000);
  });

  it('50 problems or fewer are all listed, and the message does not speak of more', async () => {
    const body: Record<string, unknown> = {
      slug: `f-${rand(4)}`,
      name: 'Fifty',
    };
    for (let i = 0; i < 50; i++) body[`unknown_${i}`] = i;
    const res = await stack.admin.post('/api/firms', body);
    expect(expectError(res, 400, 'invalid_request')).toHaveLength(50);
    expect(res.body.error.message).not.toMatch(/not listed/);
  });
});

describe('path parameters are validated before authentication; errors echo ≤ 100 characters', () => {
  const long = 'a'.repeat(10_000);
  const echoed = (res: ApiResponse) => expect(res.text).not.toContain('a'.repeat(101));

  it('a 10 kB {firm} on the call webhook: 400 whatever the credentials, and not echoed', async () => {
    const body = JSON.stringify({
      event: 'call_started',
      call: { call_id: 'c1' },
    });
    const credentials: Array<Record<string, string>> = [
      {},
      { Authorization: 'Bearer not-a-token' },
      { Authorization: `Bearer ${stack.config.adminApiKey}` },
      { Authorization: `Bearer ${firm.key}` },
      { 'x-retell-signature': 'v=1,d=00' },
    ];
    for (const headers of credentials) {
      const res = await send('POST', `/api/v2/${long}/webhook`, {
        body,
        headers: { 'Content-Type': 'application/json', ...headers },
      });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual(['/firm']);
      echoed(res);
    }
  });

  it('a malformed path parameter on a token route is a 400 also without a token', async () => {
    expectError(await stack.api.get('/api/firms/NOT_A_SLUG'), 400, 'invalid_request');
    expectError(await stack.api.get(`/api/v2/get-call/${'c'.repeat(129)}`), 400, 'invalid_request');
    expectError(await stack.api.delete(`/api/auth/api-keys/${'k'.repeat(129)}`), 400, 'invalid_request');
    // A well-formed one still needs the token first.
    expectError(await stack.api.get('/api/firms/some-firm'), 401, 'unauthorized');
  });

  it('an unknown route with a 10 kB path is a 404 that echoes at most 100 characters', async () => {
    const res = await stack.api.get(`/${long}`);
    expectError(res, 404, 'route_not_found');
    echoed(res);
  });

  it('a 10 kB unknown field name is not echoed in full', async () => {
    const res = await stack.admin.post('/api/firms', {
      slug: `f-${rand(4)}`,
      name: 'X',
      [long]: 1,
    });
    expectError(res, 400, 'invalid_request');
    echoed(res);
  });

  it('a 5 kB Content-Encoding is not echoed', async () => {
    const res = await send('POST', '/api/firms', {
      body: '{}',
      headers: {
        'Content-Type': 'application/json',
        'Content-Encoding': long.slice(0, 5000),
        Authorization: `Bearer ${stack.config.adminApiKey}`,
      },
    });
    expectError(res, 415, 'unsupported_media_type');
    echoed(res);
  });

  it('unknown voice, agent and firm values are echoed at most 100 characters long', async () => {
    const voice = await firm.client.post('/api/v2/create-agent', {
      firmSlug: firm.slug,
      agent_name: 'X',
      voice_id: 'a'.repeat(200),
    });
    expectError(voice, 400, 'unknown_voice');
    echoed(voice);
    const agent = await firm.client.post('/api/v2/create-chat', {
      agentId: 'a'.repeat(128),
      firmSlug: firm.slug,
    });
    expectError(agent, 404, 'agent_not_found');
    echoed(agent);
    const call = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: 'a'.repeat(128),
      firmSlug: firm.slug,
    });
    expectError(call, 404, 'agent_not_found');
    echoed(call);
  });
});

describe('the NUL character (PostgreSQL-backed stores cannot hold it)', () => {
  const post = (path: string, body: string) =>
    send('POST', path, {
      body,
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${firm.key}` },
    });

  it('in our own bodies, in a value or a key: 400 invalid_request that names it, nothing stored', async () => {
    const before = await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug });
    for (const [body, path] of [
      [`{"firmSlug":"${firm.slug}","first_name":"A\\u0000B"}`, '/first_name'],
      [`{"firmSlug":"${firm.slug}","first_name":"ok","\\u0000":"x"}`, '/\ufffd'],
    ] as const) {
      const res = await post('/api/leads', body);
      expect(expectError(res, 400, 'invalid_request').map((d) => d.path)).toEqual([path]);
      expect(res.body.error.message).toMatch(/NUL character/);
    }
    expect(await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug })).toBe(
      before,
    );
  });

  it('in a path id or a query value (%00): 400 invalid_request naming it, never a 500 from the store', async () => {
    const auth = { headers: { Authorization: `Bearer ${firm.key}` } };
    for (const path of [
      '/api/v2/get-call/x%00y',
      '/api/v2/get-agent/a%00',
      '/api/leads/%00lead',
      '/api/leads/campaigns/c%00/launch',
      `/api/leads?firmSlug=${firm.slug}&cursor=%00`,
      `/api/contacts?firmSlug=${firm.slug}&q=a%00b`,
    ]) {
      const res = await send(path.endsWith('/launch') ? 'POST' : 'GET', path, auth);
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message, path).toMatch(/NUL character/);
    }
  });

  it('the six characters \\u0000 written as text (an escaped backslash) are ordinary text', async () => {
    const res = await post('/api/leads', `{"firmSlug":"${firm.slug}","notes":"path C:\\\\u0000x"}`);
    expect(res.status).toBe(200);
    expect(res.body.notes).toBe('path C:\\u0000x');
  });

  it("in a webhook sender's body: accepted, the NUL replaced by U+FFFD and the rest kept", async () => {
    const callId = `nul_${rand()}`;
    const res = await post(
      `/api/v2/${firm.slug}/webhook`,
      `{"event":"call_ended","call":{"call_id":"${callId}","transcript":"Agent: Hi\\u0000there","x\\u0000y":1}}`,
    );
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { received: true } });
    // Its job, or its outbox entry when the add took longer than ENQUEUE_TIMEOUT_MS (a loaded machine).
    const { byCall } = await deliveredCallEvents(stack, [callId], { completed: true });
    expect(byCall.get(callId)?.call.transcript).toBe('Agent: Hi\uFFFDthere');
  });
});

describe('a "__proto__" key in a body (refused by the JSON parser)', () => {
  it('is a 400 invalid_request that says which key, at the top or nested, and nothing is stored', async () => {
    const before = await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug });
    for (const rawBody of [
      `{"firmSlug":"${firm.slug}","__proto__":{"first_name":"x"}}`,
      `{"firmSlug":"${firm.slug}","first_name":"A","notes":"n","__proto__":"x"}`,
    ]) {
      const res = await send('POST', '/api/leads', {
        body: rawBody,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${firm.key}` },
      });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message).toMatch(/"__proto__"/);
    }
    const nested = await send('POST', '/api/firms', {
      body: `{"slug":"f-${rand(4)}","name":"P","settings":{"__proto__":{"timezone":"UTC"}}}`,
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${stack.config.adminApiKey}` },
    });
    expectError(nested, 400, 'invalid_request');
    expect(nested.body.error.message).toMatch(/"__proto__"/);
    expect(await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug })).toBe(
      before,
    );
  });
});

describe('compressed bodies (Content-Encoding)', () => {
  const postLead = (body: Buffer | string, encoding: string) =>
    stack.api.request('POST', '/api/leads', {
      rawBody: body,
      headers: {
        'Content-Type': 'application/json',
        'Content-Encoding': encoding,
        Authorization: `Bearer ${firm.key}`,
      },
    });
  const lead = (name: string) => JSON.stringify({ firmSlug: firm.slug, first_name: name });

  it('gzip, deflate and br bodies are read', async () => {
    for (const [encoding, compress] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const) {
      const res = await postLead(compress(Buffer.from(lead(`Z ${encoding}`))), encoding);
      expect({ status: res.status, name: res.body.first_name }).toEqual({
        status: 200,
        name: `Z ${encoding}`,
      });
    }
  });

  it('a body that does not decompress as its Content-Encoding says: 400 invalid_request, never a 500', async () => {
    const before = await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug });
    const truncated = gzipSync(Buffer.from(lead('Cut'))).subarray(0, 12);
    for (const [body, encoding] of [
      [lead('Plain'), 'gzip'],
      [lead('Plain'), 'deflate'],
      [lead('Plain'), 'br'],
      [truncated, 'gzip'],
    ] as const) {
      const res = await postLead(body, encoding);
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message, encoding).toMatch(/Content-Encoding/);
    }
    expect(await stack.services.mongo.db.collection('leads').countDocuments({ firm: firm.slug })).toBe(
      before,
    );
    expect((await stack.api.get('/healthz')).status).toBe(200);
  });
});
