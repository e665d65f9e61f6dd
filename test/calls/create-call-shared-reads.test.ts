// create-outbound-call reads its firm and agent through the read cache without copying them
// (core/domain/access/access.ts `requireFirmToRead`, core/domain/agents/agents.ts `getFirmAgent`):
// on a warm cache both hand out the cache's own document, frozen all the way down, so nothing a
// request does can change what the next one reads, and a change made through the API is still
// seen by the very next request. The stack's web runs in this process, on the services used here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireFirmToRead } from '../../core/domain/access/access.js';
import type { Principal } from '../../core/domain/access/principal.js';
import { getFirmAgent } from '../../core/domain/agents/agents.js';
import { peekFirm } from '../../core/domain/firms/firms.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from './support.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
let dialled = 0;

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
  other = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(() => stack?.stop());

const principalOf = (slug: string): Principal => ({
  kind: 'firm',
  firm: slug,
  via: 'api_key',
  subject: 'key_test',
});

/** One create-outbound-call of the firm with its agent: 200, as the route answers it. */
async function createCall(): Promise<void> {
  dialled += 1;
  const res = await firm.client.post('/api/v2/create-outbound-call', {
    firmSlug: firm.slug,
    agentId,
    toNumber: `+1415555${String(dialled).padStart(4, '0')}`,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

describe("create-outbound-call's firm and agent reads", () => {
  it("hand out the cache's own documents, frozen all the way down, once a request has read them", async () => {
    await createCall();
    const db = stack.services.mongo.db;
    const agent = await getFirmAgent(db, firm.slug, agentId);
    expect(await getFirmAgent(db, firm.slug, agentId)).toBe(agent);
    expect(Object.isFrozen(agent)).toBe(true);
    expect(Object.isFrozen(agent.intake_questions)).toBe(true);
    expect(Object.isFrozen(agent.intake_questions[0])).toBe(true);
    const read = await requireFirmToRead(db, principalOf(firm.slug), firm.slug);
    expect(read).toBe(await peekFirm(db, firm.slug));
    expect(Object.isFrozen(read)).toBe(true);
    expect(Object.isFrozen(read.settings)).toBe(true);
    expect(Object.isFrozen(read.settings.allowed_call_countries)).toBe(true);
  });

  it('refuse a write to them, which changes nothing the next request reads', async () => {
    const db = stack.services.mongo.db;
    const agent = await getFirmAgent(db, firm.slug, agentId);
    const name = agent.agent_name;
    expect(() => {
      (agent as { agent_name: string }).agent_name = 'Changed in place';
    }).toThrow(TypeError);
    expect((await getFirmAgent(db, firm.slug, agentId)).agent_name).toBe(name);
    await createCall();
  });

  it('still check the firm: another firm is 403, no firm 404, and an agent of another firm 404', async () => {
    const db = stack.services.mongo.db;
    await expect(requireFirmToRead(db, principalOf(other.slug), firm.slug)).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      requireFirmToRead(db, { kind: 'platform', via: 'platform_key', subject: 'platform' }, 'no-such-firm'),
    ).rejects.toMatchObject({ status: 404 });
    await expect(getFirmAgent(db, other.slug, agentId)).rejects.toMatchObject({ status: 404 });
    const res = await other.client.post('/api/v2/create-outbound-call', {
      firmSlug: other.slug,
      agentId,
      toNumber: '+14155550199',
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('agent_not_found');
  });

  it('see a change made through the API on the very next read', async () => {
    const db = stack.services.mongo.db;
    const before = await getFirmAgent(db, firm.slug, agentId);
    const renamed = await firm.client.patch(`/api/v2/update-agent/${agentId}`, { agent_name: 'Night desk' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    await createCall();
    const after = await getFirmAgent(db, firm.slug, agentId);
    expect(after).not.toBe(before);
    expect(after.agent_name).toBe('Night desk');
    expect(before.agent_name).not.toBe('Night desk');
  });
});
