// The web process caches API keys, firms, agents and session revocations (core/platform/db/
// read-cache.ts). A change made through one web process takes effect on the very next request
// on another, and a warm request reads none of them from the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, freshMongoUri, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';
import { createAgent } from '../calls/support.js';

let stack: Stack;
let second: Awaited<ReturnType<typeof startWebProcess>>;
beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({ env: { MONGODB_URI: uri.toString() } });
  second = await startWebProcess(stack.env);
});
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

const call = (client: ApiClient, firmSlug: string, agentId: string, toNumber = '+12125550100') =>
  client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug });

describe('read cache across two web processes', () => {
  it('a revoked API key is refused on the very next request to the other process', async () => {
    const firm = await createFirm(stack);
    const onSecond = new ApiClient(second.baseUrl).withToken(firm.key);
    for (let i = 0; i < 3; i++) expect((await onSecond.get(`/api/firms/${firm.slug}`)).status).toBe(200);
    const keys = await stack.admin.get(`/api/auth/api-keys?firmSlug=${firm.slug}`);
    expect((await stack.admin.delete(`/api/auth/api-keys/${keys.body[0].id}`)).status).toBe(200);
    expectError(await onSecond.get(`/api/firms/${firm.slug}`), 401, 'unauthorized');
  });

  it('a deleted agent is not found on the very next request to the other process', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const onSecond = new ApiClient(second.baseUrl).withToken(firm.key);
    for (let i = 0; i < 3; i++) expect((await call(onSecond, firm.slug, agentId)).status).toBe(200);
    expect((await firm.client.delete(`/api/v2/delete-agent/${agentId}`)).status).toBe(200);
    expectError(await call(onSecond, firm.slug, agentId), 404, 'agent_not_found');
  });

  it('a patched firm is read afresh on the very next request to the other process', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const onSecond = new ApiClient(second.baseUrl).withToken(firm.key);
    for (let i = 0; i < 3; i++) expect((await call(onSecond, firm.slug, agentId)).status).toBe(200);
    const patched = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { allowed_call_countries: ['GB'] },
    });
    expect(patched.status).toBe(200);
    expectError(await call(onSecond, firm.slug, agentId), 400, 'destination_not_allowed');
    expect((await onSecond.get(`/api/firms/${firm.slug}`)).body.settings.allowed_call_countries).toEqual([
      'GB',
    ]);
  });
});

describe('read cache on one process', () => {
  it('a warm create-outbound-call reads no key, firm or agent from the database', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    const reads: string[] = [];
    const listener = (e: CommandStartedEvent) => {
      if (e.commandName === 'find') reads.push(String((e.command as { find: string }).find));
    };
    stack.services.mongo.client.on('commandStarted', listener);
    try {
      expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    } finally {
      stack.services.mongo.client.off('commandStarted', listener);
    }
    expect(reads.filter((c) => ['api_key_hashes', 'firms', 'agents'].includes(c))).toEqual([]);
  });
});
