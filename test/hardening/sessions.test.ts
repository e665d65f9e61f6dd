import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import type { ApiClient, ApiResponse } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { setTimeout as sleep } from 'node:timers/promises';

// docs/authentication.md#sessions: a session token lives at most 24 h, and POST /api/auth/revoke-sessions
// ends every session token of a firm issued before the call.

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const HOUR = 3600;
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A session JWT with exactly these claims: `iat` and `exp` are absolute seconds, or absent. */
function sessionJwt(claims: { firm: string; sub?: string; iat?: number; exp: number }): Promise<string> {
  return new SignJWT({ sub: 'user-1', ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(new TextEncoder().encode(stack.config.sessionSecret));
}

/** A session token issued now that lives `ttlSeconds`, as the dashboard's login makes them. */
const session = (firm: string, ttlSeconds = HOUR): Promise<string> =>
  signSessionToken({ firm, sub: `user-${rand(3)}` }, stack.config.sessionSecret, ttlSeconds);

const as = (token: string): ApiClient => stack.api.withToken(token);
const readFirm = (client: ApiClient, slug: string) => client.get(`/api/firms/${slug}`);
const revoke = (client: ApiClient, body: unknown) => client.post('/api/auth/revoke-sessions', body);

function expectUnauthorized(res: ApiResponse): void {
  expectError(res, 401, 'unauthorized');
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
}

describe('a session token lives at most 24 hours', () => {
  it('a token valid for 100 years is 401', async () => {
    const iat = nowSeconds();
    const token = await sessionJwt({ firm: firmA.slug, iat, exp: iat + 100 * 365 * 24 * HOUR });
    expectUnauthorized(await readFirm(as(token), firmA.slug));
  });

  it('a 25-hour token is 401; a 23-hour token works', async () => {
    expectUnauthorized(await readFirm(as(await session(firmA.slug, 25 * HOUR)), firmA.slug));
    expect((await readFirm(as(await session(firmA.slug, 23 * HOUR)), firmA.slug)).status).toBe(200);
  });

  it('exactly 24 hours from iat to exp is allowed, one second more is not', async () => {
    const iat = nowSeconds();
    const ok = await sessionJwt({ firm: firmA.slug, iat, exp: iat + 24 * HOUR });
    expect((await readFirm(as(ok), firmA.slug)).status).toBe(200);
    const tooLong = await sessionJwt({ firm: firmA.slug, iat, exp: iat + 24 * HOUR + 1 });
    expectUnauthorized(await readFirm(as(tooLong), firmA.slug));
  });

  it('the lifetime is measured from iat: an old token near its end still has a 24-hour lifetime', async () => {
    // Issued 30 hours ago for 31 hours: only one hour left, but it was made to live 31.
    const iat = nowSeconds() - 30 * HOUR;
    const token = await sessionJwt({ firm: firmA.slug, iat, exp: iat + 31 * HOUR });
    expectUnauthorized(await readFirm(as(token), firmA.slug));
  });

  it('without iat, a token expiring in 25 hours is 401 (and one expiring in 23 hours works)', async () => {
    const long = await sessionJwt({ firm: firmA.slug, exp: nowSeconds() + 25 * HOUR });
    expectUnauthorized(await readFirm(as(long), firmA.slug));
    const short = await sessionJwt({ firm: firmA.slug, exp: nowSeconds() + 23 * HOUR });
    expect((await readFirm(as(short), firmA.slug)).status).toBe(200);
  });

  it('an iat in the future is 401 (a few seconds of clock skew are tolerated)', async () => {
    const later = nowSeconds() + 10 * 60;
    const future = await sessionJwt({ firm: firmA.slug, iat: later, exp: later + HOUR });
    expectUnauthorized(await readFirm(as(future), firmA.slug));
    const hourAhead = nowSeconds() + HOUR;
    const farFuture = await sessionJwt({ firm: firmA.slug, iat: hourAhead, exp: hourAhead + 60 });
    expectUnauthorized(await readFirm(as(farFuture), firmA.slug));
    const skewed = nowSeconds() + 5;
    const slightlyAhead = await sessionJwt({ firm: firmA.slug, iat: skewed, exp: skewed + HOUR });
    expect((await readFirm(as(slightlyAhead), firmA.slug)).status).toBe(200);
  });

  it('a platform session (firm "*") of 1 hour works; one of 48 hours does not', async () => {
    const hour = as(await session('*', HOUR));
    expect((await readFirm(hour, firmB.slug)).status).toBe(200);
    const created = await hour.post('/api/firms', { slug: `s-${rand(4)}`, name: 'By a platform session' });
    expect(created.status).toBe(200);

    const twoDays = as(await session('*', 48 * HOUR));
    expectUnauthorized(await readFirm(twoDays, firmB.slug));
    expectUnauthorized(await twoDays.post('/api/firms', { slug: `s-${rand(4)}`, name: 'No' }));
  });
});

describe('POST /api/auth/revoke-sessions', () => {
  it('by the platform key: the firm’s earlier session tokens stop, others do not, later ones work', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const oldToken = as(await session(firm.slug));
    const noIat = as(await sessionJwt({ firm: firm.slug, exp: nowSeconds() + HOUR }));
    const otherFirmsToken = as(await session(other.slug));
    expect((await readFirm(oldToken, firm.slug)).status).toBe(200);
    expect((await readFirm(noIat, firm.slug)).status).toBe(200);

    const calledAt = Date.now();
    const res = await revoke(stack.admin, { firmSlug: firm.slug });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['firmSlug', 'revoked_before']);
    expect(res.body.firmSlug).toBe(firm.slug);
    expect(res.body.revoked_before).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const revokedBefore = Date.parse(res.body.revoked_before);
    // Every token issued up to the call (iat has whole seconds) is covered, and not much more.
    expect(revokedBefore).toBeGreaterThan(calledAt);
    expect(revokedBefore).toBeLessThanOrEqual(Date.now() + 1000);

    expectUnauthorized(await readFirm(oldToken, firm.slug));
    // A token without iat cannot show it was issued after the revocation.
    expectUnauthorized(await readFirm(noIat, firm.slug));
    // Another firm's sessions and this firm's API key are untouched.
    expect((await readFirm(otherFirmsToken, other.slug)).status).toBe(200);
    expect((await readFirm(firm.client, firm.slug)).status).toBe(200);

    // A token signed a second or more after the revocation works.
    while (Date.now() < Math.max(calledAt + 1000, revokedBefore)) await sleep(50);
    const fresh = as(await session(firm.slug));
    expect((await readFirm(fresh, firm.slug)).status).toBe(200);
  });

  it('iat has whole seconds: a token of the revocation’s second is refused, one of revoked_before works', async () => {
    const firm = await createFirm(stack);
    const calledAt = Date.now();
    const res = await revoke(stack.admin, { firmSlug: firm.slug });
    expect(res.status).toBe(200);
    const callSecond = Math.floor(calledAt / 1000);
    const sameSecond = await sessionJwt({ firm: firm.slug, iat: callSecond, exp: callSecond + HOUR });
    expectUnauthorized(await readFirm(as(sameSecond), firm.slug));
    const at = Math.ceil(Date.parse(res.body.revoked_before) / 1000);
    const atRevokedBefore = await sessionJwt({ firm: firm.slug, iat: at, exp: at + HOUR });
    expect((await readFirm(as(atRevokedBefore), firm.slug)).status).toBe(200);
  });

  it('is stored in MongoDB as a key document whose _id is the firm slug', async () => {
    const firm = await createFirm(stack);
    const res = await revoke(stack.admin, { firmSlug: firm.slug });
    expect(res.status).toBe(200);
    const doc = await stack.services.mongo.db
      .collection('session_revocations')
      .findOne({ _id: firm.slug as never });
    expect(doc).not.toBeNull();
    expect((doc!.revoked_before as Date).toISOString()).toBe(res.body.revoked_before);
  });

  it('a repeated revocation never moves revoked_before back', async () => {
    const firm = await createFirm(stack);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => revoke(stack.admin, { firmSlug: firm.slug })),
    );
    for (const r of results) expect(r.status).toBe(200);
    const latest = Math.max(...results.map((r) => Date.parse(r.body.revoked_before)));
    const again = await revoke(stack.admin, { firmSlug: firm.slug });
    expect(Date.parse(again.body.revoked_before)).toBeGreaterThanOrEqual(latest);
  });

  it("by the firm's own API key or session: 200, and the firm's sessions stop", async () => {
    const firm = await createFirm(stack);
    const token = as(await session(firm.slug));
    const byKey = await revoke(firm.client, { firmSlug: firm.slug });
    expect(byKey.status).toBe(200);
    expect(byKey.body.firmSlug).toBe(firm.slug);
    expectUnauthorized(await readFirm(token, firm.slug));

    // A session of the firm may revoke its firm's sessions, itself included.
    const other = await createFirm(stack);
    const own = as(await session(other.slug));
    expect((await revoke(own, { firmSlug: other.slug })).status).toBe(200);
    expectUnauthorized(await readFirm(own, other.slug));
  });

  it('a platform session may revoke a firm’s sessions', async () => {
    const firm = await createFirm(stack);
    const token = as(await session(firm.slug));
    const res = await revoke(as(await session('*')), { firmSlug: firm.slug });
    expect(res.status).toBe(200);
    expectUnauthorized(await readFirm(token, firm.slug));
  });

  it("another firm's key or session is 403, and the firm's sessions keep working", async () => {
    const token = as(await session(firmB.slug));
    expectError(await revoke(firmA.client, { firmSlug: firmB.slug }), 403, 'forbidden');
    expectError(await revoke(as(await session(firmA.slug)), { firmSlug: firmB.slug }), 403, 'forbidden');
    expect((await readFirm(token, firmB.slug)).status).toBe(200);
  });

  it('an unknown firm is 404 firm_not_found', async () => {
    expectError(await revoke(stack.admin, { firmSlug: `no-such-${rand(3)}` }), 404, 'firm_not_found');
  });

  it('without a valid token it is 401', async () => {
    expectUnauthorized(await revoke(stack.api, { firmSlug: firmA.slug }));
  });

  it.each([
    ['an empty body', {}],
    ['an unknown field', { firmSlug: 'A', everything: true }],
    ['a misspelt field', { firm_slug: 'A' }],
    ['an operator instead of a slug', { firmSlug: { $ne: null } }],
    [
      'a slug with a "*" in it (only "*" itself names the platform: platform-session-revocation.test.ts)',
      { firmSlug: 'a*' },
    ],
    ['a slug that is not a slug', { firmSlug: 'Not A Slug' }],
  ])('%s is 400', async (_what, body) => {
    const fixed = JSON.parse(JSON.stringify(body).replace('"A"', JSON.stringify(firmA.slug)));
    expectError(await revoke(stack.admin, fixed), 400, 'invalid_request');
  });

  it('is in the OpenAPI document with its body schema', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    const op = doc.paths['/api/auth/revoke-sessions']?.post;
    expect(op).toBeDefined();
    const schema = op.requestBody.content['application/json'].schema;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['firmSlug']);
    expect(op.summary).toMatch(/second/);
  });
});
