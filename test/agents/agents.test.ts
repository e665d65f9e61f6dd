// Agent Config and voices (docs/calls.md#agents-and-voices): the simulator's voice catalogue, agent CRUD
// with voice checking, and firm isolation on every agent route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { expectError } from '../helpers/expect-error.js';
import { holdLock, landsWithin } from '../helpers/held-lock.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let a: Awaited<ReturnType<typeof createFirm>>;
let b: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  a = await createFirm(stack);
  b = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const agents = () => stack.services.mongo.db.collection(COLLECTIONS.agents);

async function createAgent(firm: typeof a, extra: Record<string, unknown> = {}) {
  const res = await firm.client.post('/api/v2/create-agent', {
    firmSlug: firm.slug,
    agent_name: 'Intake desk',
    voice_id: 'sim-en-us-ava',
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe('list-voices (simulator)', () => {
  it('lists at least 6 voices in at least 2 languages, with locale tags and normalised genders', async () => {
    const res = await a.client.get('/api/v2/list-voices');
    expect(res.status).toBe(200);
    const voices = res.body as Array<{ voice_id: string; name: string; language: string; gender: string }>;
    expect(voices.length).toBeGreaterThanOrEqual(6);
    expect(new Set(voices.map((v) => v.language.split('-')[0])).size).toBeGreaterThanOrEqual(2);
    for (const v of voices) {
      expect(Object.keys(v)).toEqual(expect.arrayContaining(['voice_id', 'name', 'language', 'gender']));
      expect(v.language).toMatch(/^[a-z]{2}-[A-Z]{2}$/);
      expect(['male', 'female', 'neutral']).toContain(v.gender);
    }
    expect(new Set(voices.map((v) => v.voice_id)).size).toBe(voices.length);
  });

  it('needs a token', async () => {
    expectError(await stack.api.get('/api/v2/list-voices'), 401, 'unauthorized');
  });
});

describe('agents', () => {
  it('creates an agent with defaults taken from its voice and the default intake questions', async () => {
    const agent = await createAgent(a, { voice_id: 'sim-es-mx-sofia' });
    expect(agent).toMatchObject({
      agent_id: expect.stringMatching(/^agent_/),
      agent_name: 'Intake desk',
      firm: a.slug,
      voice_id: 'sim-es-mx-sofia',
      language: 'es-MX',
      intake_questions: DEFAULT_INTAKE_QUESTIONS,
      provider_agent_id: null,
    });
    const read = await a.client.get(`/api/v2/get-agent/${agent.agent_id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(agent);
  });

  it('rejects a voice that is not in list-voices with 400 unknown_voice, and stores nothing', async () => {
    const before = await agents().countDocuments({ firm: a.slug });
    const res = await a.client.post('/api/v2/create-agent', {
      firmSlug: a.slug,
      agent_name: 'Nope',
      voice_id: 'no-such-voice',
    });
    expect(expectError(res, 400, 'unknown_voice')).toEqual([
      { path: '/voice_id', message: expect.any(String) },
    ]);
    expect(await agents().countDocuments({ firm: a.slug })).toBe(before);
  });

  it('validates the body: unknown fields, types, languages and intake questions', async () => {
    const base = { firmSlug: a.slug, agent_name: 'X', voice_id: 'sim-en-us-ava' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...base, agentName: 'typo' }, '/agentName'],
      [{ ...base, agent_name: '' }, '/agent_name'],
      [{ ...base, agent_name: { $ne: null } }, '/agent_name'],
      [{ ...base, language: 'english' }, '/language'],
      [{ ...base, intake_questions: [{ key: 'Bad Key', question: 'q?' }] }, '/intake_questions/0/key'],
      [{ ...base, intake_questions: [{ key: 'ok', question: '' }] }, '/intake_questions/0/question'],
      [
        {
          ...base,
          intake_questions: [
            { key: 'same', question: 'One?' },
            { key: 'same', question: 'Two?' },
          ],
        },
        '/intake_questions/1/key',
      ],
    ];
    const before = await agents().countDocuments({});
    for (const [body, path] of cases) {
      const details = expectError(await a.client.post('/api/v2/create-agent', body), 400, 'invalid_request');
      expect(details.map((d) => d.path)).toContain(path);
    }
    expect(await agents().countDocuments({})).toBe(before);
  });

  it('updates and deletes an agent', async () => {
    const agent = await createAgent(a);
    const updated = await a.client.patch(`/api/v2/update-agent/${agent.agent_id}`, {
      agent_name: 'Night desk',
      voice_id: 'sim-en-gb-olivia',
      intake_questions: [{ key: 'full_name', question: 'Your name?' }],
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      agent_name: 'Night desk',
      voice_id: 'sim-en-gb-olivia',
      intake_questions: [{ key: 'full_name', question: 'Your name?' }],
    });
    expect(Date.parse(updated.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(agent.updated_at));
    expectError(
      await a.client.patch(`/api/v2/update-agent/${agent.agent_id}`, { voice_id: 'nope' }),
      400,
      'unknown_voice',
    );
    const deleted = await a.client.delete(`/api/v2/delete-agent/${agent.agent_id}`);
    expect(deleted.body).toEqual({ agent_id: agent.agent_id, deleted: true });
    expectError(await a.client.get(`/api/v2/get-agent/${agent.agent_id}`), 404, 'agent_not_found');
    expectError(await a.client.delete(`/api/v2/delete-agent/${agent.agent_id}`), 404, 'agent_not_found');
  });
});

describe('two updates of one agent at once', () => {
  it('take turns under the agent’s lock, each merged into the agent as it then is: both changes stand', async () => {
    const agent = await createAgent(a);
    // Each replaces the whole document: one merged into the agent as its request first read it
    // would put back the field the other changed. While the agent's lock is held, neither writes.
    const lock = await holdLock(
      stack.services.redis,
      redisKeys(stack.services.config).agentLock(agent.agent_id),
    );
    const renamed = a.client.patch(`/api/v2/update-agent/${agent.agent_id}`, { agent_name: 'Weekend desk' });
    const revoiced = a.client.patch(`/api/v2/update-agent/${agent.agent_id}`, {
      voice_id: 'sim-en-gb-olivia',
    });
    // Two seconds: far longer than either update takes when nothing holds the agent.
    expect(await landsWithin([renamed, revoiced], 2_000)).toBe('waiting');
    await lock.release();
    expect((await renamed).status).toBe(200);
    expect((await revoiced).status).toBe(200);
    const now = await a.client.get(`/api/v2/get-agent/${agent.agent_id}`);
    expect(now.body).toMatchObject({ agent_name: 'Weekend desk', voice_id: 'sim-en-gb-olivia' });
  });
});

describe('firm isolation on agents', () => {
  it('another firm’s agent is not found for get, update and delete, and stays unchanged', async () => {
    const agentOfB = await createAgent(b);
    expectError(await a.client.get(`/api/v2/get-agent/${agentOfB.agent_id}`), 404, 'agent_not_found');
    expectError(
      await a.client.patch(`/api/v2/update-agent/${agentOfB.agent_id}`, { agent_name: 'Hijacked' }),
      404,
      'agent_not_found',
    );
    expectError(await a.client.delete(`/api/v2/delete-agent/${agentOfB.agent_id}`), 404, 'agent_not_found');
    const still = await b.client.get(`/api/v2/get-agent/${agentOfB.agent_id}`);
    expect(still.status).toBe(200);
    expect(still.body.agent_name).toBe('Intake desk');
  });

  it('a firm token cannot create an agent for another firm (403), nor list its agents', async () => {
    const before = await agents().countDocuments({ firm: b.slug });
    const res = await a.client.post('/api/v2/create-agent', {
      firmSlug: b.slug,
      agent_name: 'Intruder',
      voice_id: 'sim-en-us-ava',
    });
    expectError(res, 403, 'forbidden');
    expect(await agents().countDocuments({ firm: b.slug })).toBe(before);
    expectError(await a.client.get(`/api/v2/list-agents?firmSlug=${b.slug}`), 403, 'forbidden');
  });

  it('list-agents: a firm token sees only its own; the platform sees every firm and may filter', async () => {
    const ownA = await createAgent(a);
    const ownB = await createAgent(b);
    const listA = await a.client.get('/api/v2/list-agents');
    expect(listA.status).toBe(200);
    expect(new Set(listA.body.map((x: { firm: string }) => x.firm))).toEqual(new Set([a.slug]));
    expect(listA.body.map((x: { agent_id: string }) => x.agent_id)).toContain(ownA.agent_id);
    for (const entry of listA.body) {
      expect(Object.keys(entry).sort()).toEqual(
        ['agent_id', 'agent_name', 'created_at', 'firm', 'language', 'voice_id'].sort(),
      );
    }

    const all = await stack.admin.get('/api/v2/list-agents');
    const ids = all.body.map((x: { agent_id: string }) => x.agent_id);
    expect(ids).toEqual(expect.arrayContaining([ownA.agent_id, ownB.agent_id]));
    const onlyB = await stack.admin.get(`/api/v2/list-agents?firmSlug=${b.slug}`);
    expect(new Set(onlyB.body.map((x: { firm: string }) => x.firm))).toEqual(new Set([b.slug]));
    expectError(await stack.admin.get('/api/v2/list-agents?firmSlug=no-such-firm'), 404, 'firm_not_found');
    expectError(await stack.admin.get('/api/v2/list-agents?firmSlug=Bad_Slug'), 400, 'invalid_request');
  });

  it('list-agents pages: X-Next-Cursor continues a list longer than ?limit=, newest first, none repeated or left out', async () => {
    const c = await createFirm(stack);
    const made: string[] = [];
    for (let i = 0; i < 5; i += 1) made.push((await createAgent(c, { agent_name: `Desk ${i}` })).agent_id);
    const seen: Array<{ agent_id: string; created_at: string }> = [];
    let url = '/api/v2/list-agents?limit=2';
    for (let pages = 0; pages < 10; pages += 1) {
      const res = await c.client.get(url);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(2);
      seen.push(...res.body);
      const next = res.headers.get('x-next-cursor');
      if (next === null) break;
      url = `/api/v2/list-agents?limit=2&cursor=${encodeURIComponent(next)}`;
    }
    expect(seen.map((x) => x.agent_id).sort()).toEqual([...made].sort());
    const times = seen.map((x) => Date.parse(x.created_at));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    // Without a limit the whole list comes in one page, with no cursor.
    const whole = await c.client.get('/api/v2/list-agents');
    expect(whole.body).toHaveLength(5);
    expect(whole.headers.get('x-next-cursor')).toBeNull();

    // The platform's every-firm list pages the same way.
    const first = await stack.admin.get('/api/v2/list-agents?limit=1');
    expect(first.body).toHaveLength(1);
    const everyFirm = first.headers.get('x-next-cursor');
    expect(everyFirm).not.toBeNull();
    const second = await stack.admin.get(
      `/api/v2/list-agents?limit=1&cursor=${encodeURIComponent(everyFirm!)}`,
    );
    expect(second.status).toBe(200);
    expect(second.body[0].agent_id).not.toBe(first.body[0].agent_id);

    // A cursor is bound to its list: firm c's is refused for firm a, the every-firm one for a filter.
    const ofC = (await c.client.get('/api/v2/list-agents?limit=1')).headers.get('x-next-cursor')!;
    expectError(
      await a.client.get(`/api/v2/list-agents?cursor=${encodeURIComponent(ofC)}`),
      400,
      'invalid_cursor',
    );
    expectError(
      await stack.admin.get(
        `/api/v2/list-agents?firmSlug=${c.slug}&cursor=${encodeURIComponent(everyFirm!)}`,
      ),
      400,
      'invalid_cursor',
    );
    expectError(await c.client.get('/api/v2/list-agents?limit=0'), 400, 'invalid_request');
    expectError(await c.client.get('/api/v2/list-agents?limit=5001'), 400, 'invalid_request');
  });
});
