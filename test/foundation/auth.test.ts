import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import type { ApiClient, ApiResponse } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { deliveredCallEvents } from '../helpers/webhook-outbox.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const inMinutes = (m: number): number => Math.floor(Date.now() / 1000) + m * 60;
const secretBytes = (secret: string): Uint8Array => new TextEncoder().encode(secret);

function expectUnauthorized(res: ApiResponse): void {
  expectError(res, 401, 'unauthorized');
  // Exactly as the contract writes it.
  expect(res.headers.get('www-authenticate')).toBe('Bearer');
}

/** A firm-scoped read any valid token of firm A (or the platform) may make. */
const readFirmA = (client: ApiClient) => client.get(`/api/firms/${firmA.slug}`);

describe('a request without a valid token is 401 with a Bearer challenge', () => {
  it('no Authorization header', async () => {
    expectUnauthorized(await readFirmA(stack.api));
  });

  it('an Authorization header that is not Bearer', async () => {
    const res = await stack.api.get(`/api/firms/${firmA.slug}`, {
      Authorization: `Basic ${Buffer.from(`x:${stack.config.adminApiKey}`).toString('base64')}`,
    });
    expectUnauthorized(res);
  });

  it('a garbage token', async () => {
    expectUnauthorized(await readFirmA(stack.api.withToken('garbage')));
    expectUnauthorized(await readFirmA(stack.api.withToken('a.b.c')));
  });

  it('an unknown firm API key', async () => {
    expectUnauthorized(await readFirmA(stack.api.withToken(`isk_${randomBytes(32).toString('base64url')}`)));
  });

  it('a platform key with one character changed', async () => {
    const key = stack.config.adminApiKey;
    const wrong = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    expectUnauthorized(await readFirmA(stack.api.withToken(wrong)));
  });

  it('a revoked firm API key stops working at once', async () => {
    const issued = await stack.admin.post('/api/auth/api-keys', { firmSlug: firmA.slug, name: 'to revoke' });
    expect(issued.status).toBe(200);
    const client = stack.api.withToken(issued.body.key);
    expect((await readFirmA(client)).status).toBe(200);

    const revoked = await stack.admin.delete(`/api/auth/api-keys/${issued.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ id: issued.body.id, revoked: true });
    expectUnauthorized(await readFirmA(client));
    // The firm's other key is untouched.
    expect((await readFirmA(firmA.client)).status).toBe(200);
    // Revoking again: the key no longer exists.
    expectError(await stack.admin.delete(`/api/auth/api-keys/${issued.body.id}`), 404, 'api_key_not_found');
  });
});

describe('session JWTs', () => {
  const session = (claims: { firm: string; sub: string }, ttlSeconds = 300) =>
    signSessionToken(claims, stack.config.sessionSecret, ttlSeconds);

  it('a valid firm session token acts for its firm only', async () => {
    const client = stack.api.withToken(await session({ firm: firmA.slug, sub: 'user-1' }));
    const read = await readFirmA(client);
    expect(read.status).toBe(200);
    expect(read.body.slug).toBe(firmA.slug);
    expectError(await client.get(`/api/firms/${firmB.slug}`), 403, 'forbidden');
    expectError(await client.post('/api/firms', { slug: `f-${rand(4)}`, name: 'No' }), 403, 'forbidden');
  });

  it('a session token with firm "*" acts as the platform', async () => {
    const client = stack.api.withToken(await session({ firm: '*', sub: 'operator-1' }));
    const slug = `star-${rand(4)}`;
    const created = await client.post('/api/firms', { slug, name: 'Made by a platform session' });
    expect(created.status).toBe(200);
    expect(created.body.slug).toBe(slug);
    expect((await client.get(`/api/firms/${firmB.slug}`)).status).toBe(200);
    expect((await client.get(`/api/auth/api-keys?firmSlug=${firmB.slug}`)).status).toBe(200);
  });

  it('an expired token is 401', async () => {
    expectUnauthorized(
      await readFirmA(stack.api.withToken(await session({ firm: firmA.slug, sub: 'u' }, -60))),
    );
  });

  it('a token signed with another secret is 401', async () => {
    const forged = await signSessionToken(
      { firm: '*', sub: 'mallory' },
      `x${stack.config.sessionSecret}`,
      300,
    );
    expectUnauthorized(await readFirmA(stack.api.withToken(forged)));
  });

  it('an unsigned token (alg "none") is 401', async () => {
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ firm: '*', sub: 'mallory', exp: inMinutes(5) })}.`;
    expectUnauthorized(await readFirmA(stack.api.withToken(unsigned)));
  });

  it('a token signed with the right secret but another algorithm (HS512) is 401', async () => {
    const token = await new SignJWT({ firm: firmA.slug, sub: 'u' })
      .setProtectedHeader({ alg: 'HS512' })
      .setExpirationTime(inMinutes(5))
      .sign(secretBytes(stack.config.sessionSecret));
    expectUnauthorized(await readFirmA(stack.api.withToken(token)));
  });

  it.each([
    ['without exp', { firm: 'A', sub: 'u' }],
    ['without sub', { firm: 'A', exp: 5 }],
    ['without firm', { sub: 'u', exp: 5 }],
    ['with a firm claim that is not a slug', { firm: 'Not A Slug', sub: 'u', exp: 5 }],
  ])('a token %s is 401', async (_what, template) => {
    const claims: Record<string, unknown> = { ...template };
    if (claims.firm === 'A') claims.firm = firmA.slug;
    if (typeof claims.exp === 'number') claims.exp = inMinutes(claims.exp);
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secretBytes(stack.config.sessionSecret));
    expectUnauthorized(await readFirmA(stack.api.withToken(token)));
  });
});

describe('firm isolation', () => {
  it("firm A's key may read and patch firm A", async () => {
    expect((await readFirmA(firmA.client)).status).toBe(200);
    const patched = await firmA.client.patch(`/api/firms/${firmA.slug}`, { name: 'Firm A, renamed' });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('Firm A, renamed');
  });

  it("firm A's key on firm B is 403 for GET and PATCH, and B is unchanged", async () => {
    expectError(await firmA.client.get(`/api/firms/${firmB.slug}`), 403, 'forbidden');
    expectError(
      await firmA.client.patch(`/api/firms/${firmB.slug}`, { name: 'Taken over' }),
      403,
      'forbidden',
    );
    const b = await stack.admin.get(`/api/firms/${firmB.slug}`);
    expect(b.body.name).toBe(`Firm ${firmB.slug}`);
  });

  it("firm A's key naming firm B in the query is 403 on every route, whether it reads firmSlug or not", async () => {
    const lead = await firmA.client.post('/api/leads', { firmSlug: firmA.slug, first_name: 'Q' });
    expect(lead.status).toBe(200);
    for (const path of [
      `/api/v2/${firmA.slug}/reminders?bookingUid=u1&firmSlug=${firmB.slug}`,
      `/api/leads/${lead.body.id}?firmSlug=${firmB.slug}`,
      `/api/firms/${firmA.slug}?firmSlug=${firmB.slug}`,
      `/api/v2/list-voices?firmSlug=${firmB.slug}`,
      `/api/leads?firmSlug=${firmB.slug}`,
    ]) {
      expectError(await firmA.client.get(path), 403, 'forbidden');
    }
    // Its own slug in the query is no trouble.
    expect((await firmA.client.get(`/api/leads/${lead.body.id}?firmSlug=${firmA.slug}`)).status).toBe(200);
  });

  it("firm A's key naming firm B in a repeated firmSlug query parameter is 403 too, on every route", async () => {
    const lead = await firmA.client.post('/api/leads', { firmSlug: firmA.slug, first_name: 'Q' });
    expect(lead.status).toBe(200);
    for (const path of [
      `/api/leads/${lead.body.id}`,
      `/api/firms/${firmA.slug}`,
      '/api/v2/list-voices',
      '/api/leads',
    ]) {
      for (const query of [
        `firmSlug=${firmB.slug}&firmSlug=${firmB.slug}`,
        `firmSlug=${firmA.slug}&firmSlug=${firmB.slug}`,
        `firmSlug=${firmB.slug}&firmSlug=${firmA.slug}`,
      ]) {
        expectError(await firmA.client.get(`${path}?${query}`), 403, 'forbidden');
      }
    }
    // Its own slug repeated names no other firm: the route answers as before.
    const own = `firmSlug=${firmA.slug}&firmSlug=${firmA.slug}`;
    expect((await firmA.client.get(`/api/leads/${lead.body.id}?${own}`)).status).toBe(200);
    expectError(await firmA.client.get(`/api/leads?${own}`), 400, 'invalid_request');
  });

  it("firm A's bearer key on its own webhook receivers naming firm B in the query is 403, and nothing is enqueued", async () => {
    const callId = `q_${rand()}`;
    const receivers: Array<[string, unknown]> = [
      [`/api/v2/${firmA.slug}/webhook`, { event: 'call_started', call: { call_id: callId } }],
      [`/api/v2/${firmA.slug}/booking-webhook`, { triggerEvent: 'PING', payload: {} }],
    ];
    for (const [path, body] of receivers) {
      for (const query of [`firmSlug=${firmB.slug}`, `firmSlug=${firmA.slug}&firmSlug=${firmB.slug}`]) {
        expectError(await firmA.client.post(`${path}?${query}`, body), 403, 'forbidden');
      }
    }
    const refused = await deliveredCallEvents(stack, [callId], { completed: true });
    expect(refused.byCall.size).toBe(0);
    // Its own slug in the query is no trouble.
    for (const [path, body] of receivers) {
      const res = await firmA.client.post(`${path}?firmSlug=${firmA.slug}`, body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { received: true } });
    }
  });

  it("a firm key naming a firm that does not exist is 403, not a hint that it doesn't", async () => {
    expectError(await firmA.client.get(`/api/firms/no-such-firm-${rand(3)}`), 403, 'forbidden');
  });
});

describe('a firm key cannot act as the platform', () => {
  it('cannot create firms', async () => {
    const slug = `f-${rand(4)}`;
    expectError(await firmA.client.post('/api/firms', { slug, name: 'Nope' }), 403, 'forbidden');
    expectError(await stack.admin.get(`/api/firms/${slug}`), 404, 'firm_not_found');
  });

  it('cannot issue API keys, for its own firm or another', async () => {
    for (const firmSlug of [firmA.slug, firmB.slug]) {
      expectError(
        await firmA.client.post('/api/auth/api-keys', { firmSlug, name: 'Nope' }),
        403,
        'forbidden',
      );
    }
    const keys = await stack.admin.get(`/api/auth/api-keys?firmSlug=${firmA.slug}`);
    expect(keys.body.map((k: { name: string }) => k.name)).not.toContain('Nope');
  });

  it('cannot list or revoke API keys, even its own', async () => {
    expectError(await firmA.client.get(`/api/auth/api-keys?firmSlug=${firmA.slug}`), 403, 'forbidden');
    const keys = await stack.admin.get(`/api/auth/api-keys?firmSlug=${firmB.slug}`);
    const id = keys.body[0].id as string;
    expectError(await firmA.client.delete(`/api/auth/api-keys/${id}`), 403, 'forbidden');
    // Firm B's key still works.
    expect((await firmB.client.get(`/api/firms/${firmB.slug}`)).status).toBe(200);
  });

  it('a firm session token cannot issue keys either', async () => {
    const token = await signSessionToken({ firm: firmA.slug, sub: 'u' }, stack.config.sessionSecret, 300);
    const res = await stack.api
      .withToken(token)
      .post('/api/auth/api-keys', { firmSlug: firmA.slug, name: 'Nope' });
    expectError(res, 403, 'forbidden');
  });
});
