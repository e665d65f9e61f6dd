// Revoking platform sessions (docs/authentication.md#sessions): platform session tokens (firm "*") once
// could not be revoked.
// POST /api/auth/revoke-sessions {firmSlug: "*"} with the platform key now ends every platform session
// issued up to the call, on the next request on every web process (a second web process here, whose
// read cache has seen the token work), and nothing else.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';

let stack: Stack;
let second: Awaited<ReturnType<typeof startWebProcess>>;

beforeAll(async () => {
  stack = await startStack();
  second = await startWebProcess(stack.env);
});
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

const session = (firm: string): Promise<string> =>
  signSessionToken({ firm, sub: `user-${rand(3)}` }, stack.config.sessionSecret, 3600);
const revoke = (client: ApiClient, firmSlug: string) =>
  client.post('/api/auth/revoke-sessions', { firmSlug });
const listAgents = (client: ApiClient) => client.get('/api/v2/list-agents');

describe('platform session tokens can be revoked', () => {
  it('revoke-sessions {firmSlug: "*"} by the platform key ends platform sessions on every web process', async () => {
    const firm = await createFirm(stack);
    const token = await session('*');
    const firmSession = await session(firm.slug);
    const onFirst = stack.api.withToken(token);
    const onSecond = new ApiClient(second.baseUrl).withToken(token);
    // Both processes have accepted (and cached what they read for) the platform session.
    expect((await listAgents(onFirst)).status).toBe(200);
    expect((await listAgents(onSecond)).status).toBe(200);

    const calledAt = Date.now();
    const res = await revoke(stack.admin, '*');
    expect(res.status).toBe(200);
    expect(res.body.firmSlug).toBe('*');
    // Covers every session signed up to the call, however long the call took.
    expect(Date.parse(res.body.revoked_before)).toBeGreaterThan(calledAt);

    // The very next request, on either process.
    for (const client of [onSecond, onFirst]) {
      const refused = await listAgents(client);
      expectError(refused, 401, 'unauthorized');
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    }
    // The platform key, firm keys and firm sessions are untouched.
    expect((await listAgents(stack.admin)).status).toBe(200);
    expect((await listAgents(new ApiClient(second.baseUrl).withToken(stack.config.adminApiKey))).status).toBe(
      200,
    );
    expect((await listAgents(firm.client)).status).toBe(200);
    expect((await listAgents(stack.api.withToken(firmSession))).status).toBe(200);

    // A platform session signed from revoked_before on works again.
    while (Date.now() < Date.parse(res.body.revoked_before)) await sleep(50);
    const fresh = await session('*');
    expect((await listAgents(stack.api.withToken(fresh))).status).toBe(200);
    expect((await listAgents(new ApiClient(second.baseUrl).withToken(fresh))).status).toBe(200);
  });

  it('only the platform key may revoke platform sessions: a platform session, a firm key or session is 403', async () => {
    const firm = await createFirm(stack);
    const token = await session('*');
    const platformSession = stack.api.withToken(token);
    expectError(await revoke(platformSession, '*'), 403, 'forbidden');
    expectError(await revoke(firm.client, '*'), 403, 'forbidden');
    expectError(await revoke(stack.api.withToken(await session(firm.slug)), '*'), 403, 'forbidden');
    expect((await listAgents(platformSession)).status).toBe(200);
    // The platform's revocation is no firm's: a firm's revocation leaves platform sessions alone.
    expect((await revoke(stack.admin, firm.slug)).status).toBe(200);
    expect((await listAgents(platformSession)).status).toBe(200);
  });

  it('"*" is the only non-slug accepted', async () => {
    for (const firmSlug of ['**', '*a', 'a*', ' *', '%2A']) {
      expectError(await revoke(stack.admin, firmSlug), 400, 'invalid_request');
    }
  });
});
