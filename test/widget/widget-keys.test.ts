// Publishable widget keys over HTTP (docs/widget.md#widget-keys): creating, listing, patching and
// deleting them, firm isolation on every route, and POST /api/widget/session turning a key and an
// allowed Origin into a widget token bound to that origin and agent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { jwtClaims } from './widget-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
let firmB: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
const SITE = 'https://firm.example';

beforeAll(async () => {
  stack = await startStack();
  const a = await createFirm(stack);
  const b = await createFirm(stack);
  firmA = { ...a, agentId: (await createAgent(a.client, a.slug)).agent_id };
  firmB = { ...b, agentId: (await createAgent(b.client, b.slug)).agent_id };
});
afterAll(async () => stack?.stop());

describe('widget keys: create, read, list, patch, delete', () => {
  it('a firm token creates a key for its firm: iwpk_…, shown in full (it is publishable)', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug, {
      allowed_origins: [SITE, 'http://127.0.0.1:8080'],
      agent_id: firmA.agentId,
    });
    expect(key.key).toMatch(/^iwpk_[A-Za-z0-9_-]{32}$/);
    expect(key).toMatchObject({
      firmSlug: firmA.slug,
      name: 'Website',
      allowed_origins: [SITE, 'http://127.0.0.1:8080'],
      agent_id: firmA.agentId,
      challenge: null,
    });
    const read = await firmA.client.get(`/api/widget-keys/${key.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(key);
  });

  it('the platform creates one for any firm; the list pages newest first with a cursor', async () => {
    const firm = await createFirm(stack);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createWidgetKey(stack.admin, firm.slug, { name: `k${i}` }));
    const first = await firm.client.get('/api/widget-keys?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.widget_keys.map((k: { name: string }) => k.name)).toEqual(['k2', 'k1']);
    expect(first.body.next_cursor).not.toBe('');
    const second = await stack.admin.get(
      `/api/widget-keys?firmSlug=${firm.slug}&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
    );
    expect(second.body.widget_keys.map((k: { name: string }) => k.name)).toEqual(['k0']);
    expect(second.body.next_cursor).toBe('');
    // The platform acts on every firm: it must name one.
    expectError(await stack.admin.get('/api/widget-keys'), 400, 'invalid_request');
  });

  it('allowed_origins must be exact origins, 1 to 20, each as a browser writes it', async () => {
    const bad = async (allowed_origins: unknown) =>
      firmA.client.post('/api/widget-keys', { firmSlug: firmA.slug, name: 'x', allowed_origins });
    for (const origins of [
      [],
      ['https://firm.example/'],
      ['https://firm.example/path'],
      ['https://FIRM.example'],
      ['firm.example'],
      ['ftp://firm.example'],
      ['https://firm.example:443'],
      ['https://*.firm.example'],
      [SITE, SITE],
      Array.from({ length: 21 }, (_, i) => `https://s${i}.example`),
      'https://firm.example',
    ]) {
      const details = expectError(await bad(origins), 400, 'invalid_request');
      expect(details[0]?.path ?? '', JSON.stringify(origins)).toMatch(/^\/allowed_origins/);
    }
    const twenty = Array.from({ length: 20 }, (_, i) => `https://s${i}.example`);
    expect(
      (await createWidgetKey(firmA.client, firmA.slug, { allowed_origins: twenty })).allowed_origins,
    ).toEqual(twenty);
  });

  it("the default agent must be the firm's (404); unknown fields are refused (400)", async () => {
    const res = await firmA.client.post('/api/widget-keys', {
      firmSlug: firmA.slug,
      name: 'x',
      allowed_origins: [SITE],
      agent_id: firmB.agentId,
    });
    expectError(res, 404, 'agent_not_found');
    expectError(
      await firmA.client.post('/api/widget-keys', {
        firmSlug: firmA.slug,
        name: 'x',
        allowed_origins: [SITE],
        x: 1,
      }),
      400,
      'invalid_request',
    );
  });

  it('PATCH changes name, origins, agent and challenge; null clears the agent and the challenge', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    const patched = await firmA.client.patch(`/api/widget-keys/${key.id}`, {
      name: 'Main site',
      allowed_origins: ['https://www.firm.example'],
      agent_id: firmA.agentId,
      challenge: 'altcha',
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Main site',
      key: key.key,
      allowed_origins: ['https://www.firm.example'],
      agent_id: firmA.agentId,
      challenge: 'altcha',
    });
    const cleared = await firmA.client.patch(`/api/widget-keys/${key.id}`, {
      agent_id: null,
      challenge: null,
    });
    expect(cleared.body).toMatchObject({ agent_id: null, challenge: null, name: 'Main site' });
  });

  it('firm isolation: firm B cannot read, list, patch or delete firm A’s keys', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    expectError(await firmB.client.get(`/api/widget-keys/${key.id}`), 404, 'widget_key_not_found');
    expectError(
      await firmB.client.patch(`/api/widget-keys/${key.id}`, { name: 'mine' }),
      404,
      'widget_key_not_found',
    );
    expectError(await firmB.client.delete(`/api/widget-keys/${key.id}`), 404, 'widget_key_not_found');
    expectError(await firmB.client.get(`/api/widget-keys?firmSlug=${firmA.slug}`), 403, 'forbidden');
    expectError(
      await firmB.client.post('/api/widget-keys', {
        firmSlug: firmA.slug,
        name: 'x',
        allowed_origins: [SITE],
      }),
      403,
      'forbidden',
    );
    const listB = await firmB.client.get('/api/widget-keys');
    expect(listB.body.widget_keys.map((k: { id: string }) => k.id)).not.toContain(key.id);
    // Still there, unchanged, for its own firm.
    expect((await firmA.client.get(`/api/widget-keys/${key.id}`)).body.name).toBe('Website');
  });

  it('a widget token is refused on the widget-key routes (403)', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    const session = await askSession(stack.api, SITE, { key: key.key });
    const widget = stack.api.withToken(session.body.token);
    expectError(await widget.get(`/api/widget-keys/${key.id}`), 403, 'forbidden');
    expectError(await widget.get(`/api/widget-keys?firmSlug=${firmA.slug}`), 403, 'forbidden');
  });
});

describe('POST /api/widget/session', () => {
  it('a key from an allowed origin: a one-hour widget token bound to the origin and the key’s agent', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug, { agent_id: firmA.agentId });
    const before = Date.now();
    const res = await askSession(stack.api, SITE, { key: key.key });
    const after = Date.now();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      agent: { agent_id: firmA.agentId, agent_name: 'Intake Ava' },
      settings: { challenge: null, max_messages_per_chat: 100 },
    });
    expect(res.body.token).toMatch(/^iwt_/);
    // An hour after the whole second it was minted in, which lies between `before` and `after`
    // however long the request took.
    const expires = Date.parse(res.body.expires_at);
    const wholeSecond = (ms: number) => Math.floor(ms / 1000) * 1000;
    expect(expires).toBeGreaterThanOrEqual(wholeSecond(before) + 60 * 60 * 1000);
    expect(expires).toBeLessThanOrEqual(wholeSecond(after) + 60 * 60 * 1000);
    expect(jwtClaims(res.body.token)).toMatchObject({
      typ: 'widget',
      firm: firmA.slug,
      wk: key.id,
      origin: SITE,
      agent: firmA.agentId,
    });
  });

  it('the token chats from its origin, with its agent only, and only on the chat routes', async () => {
    const other = (await createAgent(firmA.client, firmA.slug, { agent_name: 'Other' })).agent_id;
    const key = await createWidgetKey(firmA.client, firmA.slug, { agent_id: firmA.agentId });
    const { body } = await askSession(stack.api, SITE, { key: key.key });
    const widget = stack.api.withToken(body.token);
    const open = (agentId: string, origin?: string) =>
      widget.post(
        '/api/v2/create-chat',
        { firmSlug: firmA.slug, agentId },
        origin === undefined ? {} : { Origin: origin },
      );
    const chat = await open(firmA.agentId, SITE);
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expectError(await open(other, SITE), 403, 'forbidden');
    expectError(await open(firmA.agentId, 'https://evil.example'), 403, 'origin_not_allowed');
    const reply = await widget.post(
      '/api/v2/chat-completion',
      { chatId: chat.body.chat_id, message: 'Hello' },
      {
        Origin: SITE,
      },
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectError(await widget.get('/api/leads'), 403, 'forbidden');
  });

  it("the key's tokens end with it: deleted, or no longer allowing the token's origin (401)", async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug, {
      agent_id: firmA.agentId,
      allowed_origins: [SITE, 'https://www.firm.example'],
    });
    const tokenOf = async (origin: string) =>
      stack.api.withToken((await askSession(stack.api, origin, { key: key.key })).body.token);
    const open = (client: typeof stack.api) =>
      client.post('/api/v2/create-chat', { firmSlug: firmA.slug, agentId: firmA.agentId });
    const fromSite = await tokenOf(SITE);
    const fromWww = await tokenOf('https://www.firm.example');
    expect((await open(fromSite)).status).toBe(200);
    await firmA.client.patch(`/api/widget-keys/${key.id}`, { allowed_origins: [SITE] });
    expectError(await open(fromWww), 401, 'unauthorized');
    expect((await open(fromSite)).status).toBe(200);
    await firmA.client.delete(`/api/widget-keys/${key.id}`);
    expectError(await open(fromSite), 401, 'unauthorized');
  });

  it('agent_id picks another agent of the firm; another firm’s agent is a 404', async () => {
    const other = (await createAgent(firmA.client, firmA.slug, { agent_name: 'Second' })).agent_id;
    const key = await createWidgetKey(firmA.client, firmA.slug, { agent_id: firmA.agentId });
    const res = await askSession(stack.api, SITE, { key: key.key, agent_id: other });
    expect(res.body.agent).toEqual({ agent_id: other, agent_name: 'Second' });
    expectError(
      await askSession(stack.api, SITE, { key: key.key, agent_id: firmB.agentId }),
      404,
      'agent_not_found',
    );
  });

  it('no default agent: the firm’s newest; a firm with no agent: 404 agent_not_found', async () => {
    const firm = await createFirm(stack);
    const key = await createWidgetKey(firm.client, firm.slug);
    expectError(await askSession(stack.api, SITE, { key: key.key }), 404, 'agent_not_found');
    const agent = (await createAgent(firm.client, firm.slug, { agent_name: 'Newest' })).agent_id;
    expect((await askSession(stack.api, SITE, { key: key.key })).body.agent.agent_id).toBe(agent);
  });

  it('an origin not allowed, or none: 403 origin_not_allowed, and no token', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    for (const origin of [
      'https://evil.example',
      'https://firm.example:8443',
      'http://firm.example',
      'null',
      undefined,
    ]) {
      const res = await askSession(stack.api, origin, { key: key.key });
      expectError(res, 403, 'origin_not_allowed');
      expect(res.text).not.toContain('iwt_');
    }
  });

  it('an unknown or malformed key: 401; a missing key: 400', async () => {
    expectError(await askSession(stack.api, SITE, { key: 'iwpk_nope' }), 401, 'unauthorized');
    expectError(await askSession(stack.api, SITE, { key: 'isk_nope' }), 401, 'unauthorized');
    expectError(await askSession(stack.api, SITE, {}), 400, 'invalid_request');
    expectError(await askSession(stack.api, SITE, { key: { $ne: null } }), 400, 'invalid_request');
  });

  it('a session body over 8 KiB: 413 payload_too_large; the largest the schema allows is read', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    const largest = await askSession(stack.api, SITE, {
      key: key.key,
      agent_id: 'a'.repeat(128),
      altcha: 'x'.repeat(4096),
    });
    expectError(largest, 404, 'agent_not_found');
    const over = await askSession(stack.api, SITE, { key: key.key, altcha: 'x'.repeat(8200) });
    expectError(over, 413, 'payload_too_large');
    expect(over.text).not.toContain('iwt_');
  });

  it('a PATCH of allowed_origins and a DELETE take effect on the next request', async () => {
    const key = await createWidgetKey(firmA.client, firmA.slug);
    expect((await askSession(stack.api, SITE, { key: key.key })).status).toBe(200);
    await firmA.client.patch(`/api/widget-keys/${key.id}`, { allowed_origins: ['https://new.example'] });
    expectError(await askSession(stack.api, SITE, { key: key.key }), 403, 'origin_not_allowed');
    expect((await askSession(stack.api, 'https://new.example', { key: key.key })).status).toBe(200);
    const deleted = await firmA.client.delete(`/api/widget-keys/${key.id}`);
    expect(deleted.body).toEqual({ id: key.id, deleted: true });
    expectError(await askSession(stack.api, 'https://new.example', { key: key.key }), 401, 'unauthorized');
    expectError(await firmA.client.get(`/api/widget-keys/${key.id}`), 404, 'widget_key_not_found');
  });
});
