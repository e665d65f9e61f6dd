// provider_agent_id goes to Retell as override_agent_id on
// the platform's shared account, so a firm could dial with another firm's provider agent. Only
// the platform (key or session) may set or change it; firm tokens get 403 and nothing is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
const clients: Record<'firm key' | 'firm session' | 'platform key' | 'platform session', ApiClient> =
  {} as never;

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
  const session = (claim: string) =>
    signSessionToken({ firm: claim, sub: 'user-1' }, stack.config.sessionSecret, 600);
  clients['firm key'] = firm.client;
  clients['firm session'] = stack.api.withToken(await session(firm.slug));
  clients['platform key'] = stack.admin;
  clients['platform session'] = stack.api.withToken(await session('*'));
});
afterAll(async () => stack?.stop());

const agents = () => stack.services.mongo.db.collection(COLLECTIONS.agents);
const body = (extra: Record<string, unknown> = {}) => ({
  firmSlug: firm.slug,
  agent_name: 'Intake',
  voice_id: 'sim-en-us-ava',
  ...extra,
});

describe('provider_agent_id: platform only', () => {
  it.each(['firm key', 'firm session'] as const)(
    'a %s may not set it on create-agent: 403, no agent created',
    async (who) => {
      const before = await agents().countDocuments({ firm: firm.slug });
      const res = await clients[who].post(
        '/api/v2/create-agent',
        body({ provider_agent_id: 'agent_of_other_firm' }),
      );
      expectError(res, 403, 'forbidden');
      expect(await agents().countDocuments({ firm: firm.slug })).toBe(before);
      // Without it the same token creates agents as before.
      expect((await clients[who].post('/api/v2/create-agent', body())).status).toBe(200);
    },
  );

  it.each(['firm key', 'firm session'] as const)(
    'a %s may not set or change it on update-agent: 403, nothing written; it still reads it',
    async (who) => {
      const created = await stack.admin.post(
        '/api/v2/create-agent',
        body({ provider_agent_id: 'agent_mine' }),
      );
      expect(created.status).toBe(200);
      const id = created.body.agent_id as string;
      const bare = await clients[who].post('/api/v2/create-agent', body());
      const before = await agents().findOne({ _id: id as never });
      const bareBefore = await agents().findOne({ _id: bare.body.agent_id as never });

      for (const [agentId, value] of [
        [id, 'agent_of_other_firm'], // change
        [bare.body.agent_id as string, 'agent_of_other_firm'], // set
      ] as const) {
        const res = await clients[who].patch(`/api/v2/update-agent/${agentId}`, {
          agent_name: 'Renamed',
          provider_agent_id: value,
        });
        expectError(res, 403, 'forbidden');
      }
      expect(await agents().findOne({ _id: id as never })).toEqual(before);
      expect(await agents().findOne({ _id: bare.body.agent_id as never })).toEqual(bareBefore);

      const read = await clients[who].get(`/api/v2/get-agent/${id}`);
      expect(read.status).toBe(200);
      expect(read.body.provider_agent_id).toBe('agent_mine');
      // Sending back the value it read is no change: a read-modify-write client keeps working.
      const roundTrip = await clients[who].patch(`/api/v2/update-agent/${id}`, {
        agent_name: 'Renamed',
        provider_agent_id: 'agent_mine',
      });
      expect(roundTrip.status).toBe(200);
      expect(roundTrip.body).toMatchObject({ agent_name: 'Renamed', provider_agent_id: 'agent_mine' });
    },
  );

  it.each(['platform key', 'platform session'] as const)('a %s sets and changes it', async (who) => {
    const created = await clients[who].post('/api/v2/create-agent', body({ provider_agent_id: 'agent_a' }));
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.provider_agent_id).toBe('agent_a');
    const id = created.body.agent_id as string;
    const changed = await clients[who].patch(`/api/v2/update-agent/${id}`, { provider_agent_id: 'agent_b' });
    expect(changed.status).toBe(200);
    expect(changed.body.provider_agent_id).toBe('agent_b');
    expect((await agents().findOne({ _id: id as never }))?.provider_agent_id).toBe('agent_b');
    expect((await firm.client.get(`/api/v2/get-agent/${id}`)).body.provider_agent_id).toBe('agent_b');
  });
});
