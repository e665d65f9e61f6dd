// POST /api/v2/create-outbound-call (docs/calls.md#create-outbound-call): validation with the error
// shape, firm isolation, Idempotency-Key (sequential and concurrent), and no half-written call on 503.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { freePort } from '../../scripts/local/services.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { callsOf, createAgent, simulatorCallsOf, waitForCall } from './support.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;
let agentA: string;
let agentB: string;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
  agentA = await createAgent(firmA.client, firmA.slug);
  agentB = await createAgent(firmB.client, firmB.slug);
});
afterAll(async () => stack?.stop());

const valid = () => ({ toNumber: '+14155550123', agentId: agentA, firmSlug: firmA.slug });

/** A rejected request writes nothing: no call record and no job. */
async function expectNothingWritten(run: () => Promise<void>): Promise<void> {
  const count = async () => ({
    calls: await callsOf(stack).countDocuments({}),
    jobs: Object.values(await stack.services.queues.calls.getJobCounts()).reduce((a, b) => a + b, 0),
  });
  const before = await count();
  await run();
  expect(await count()).toEqual(before);
}

describe('create-outbound-call validation', () => {
  const without = (key: string) => () => {
    const body: Record<string, unknown> = valid();
    delete body[key];
    return body;
  };
  const withFields = (patch: Record<string, unknown>) => () => ({ ...valid(), ...patch });
  const cases: Array<[string, () => Record<string, unknown>, string]> = [
    ['toNumber missing', without('toNumber'), '/toNumber'],
    ['agentId missing', without('agentId'), '/agentId'],
    ['firmSlug missing', without('firmSlug'), '/firmSlug'],
    ['toNumber without +', withFields({ toNumber: '14155550199' }), '/toNumber'],
    ['toNumber starting +0', withFields({ toNumber: '+04155550199' }), '/toNumber'],
    ['toNumber with spaces', withFields({ toNumber: '+1 415 555 0199' }), '/toNumber'],
    ['toNumber too short', withFields({ toNumber: '+12345' }), '/toNumber'],
    ['toNumber too long', withFields({ toNumber: '+1234567890123456' }), '/toNumber'],
    ['toNumber as a number', withFields({ toNumber: 14155550199 }), '/toNumber'],
    ['unknown field to_number', withFields({ to_number: '+14155550199' }), '/to_number'],
    ['object for firmSlug', withFields({ firmSlug: { $ne: null } }), '/firmSlug'],
    ['object for agentId', withFields({ agentId: { $gt: '' } }), '/agentId'],
    ['object for toNumber', withFields({ toNumber: { $regex: '.*' } }), '/toNumber'],
    ['dynamicVariables not an object', withFields({ dynamicVariables: 'name=Ann' }), '/dynamicVariables'],
    [
      'a dynamic variable key starting with a digit',
      withFields({ dynamicVariables: { '1name': 'Ann' } }),
      '/dynamicVariables/1name',
    ],
    [
      'a dynamic variable key with a dash',
      withFields({ dynamicVariables: { 'first-name': 'Ann' } }),
      '/dynamicVariables/first-name',
    ],
    [
      'a dynamic variable key of 65 characters',
      withFields({ dynamicVariables: { ['k'.repeat(65)]: 'x' } }),
      `/dynamicVariables/${'k'.repeat(65)}`,
    ],
    [
      'a nested object as a dynamic variable',
      withFields({ dynamicVariables: { name: { first: 'Ann' } } }),
      '/dynamicVariables/name',
    ],
    [
      'an array as a dynamic variable',
      withFields({ dynamicVariables: { tags: ['a'] } }),
      '/dynamicVariables/tags',
    ],
    [
      'null as a dynamic variable',
      withFields({ dynamicVariables: { name: null } }),
      '/dynamicVariables/name',
    ],
  ];

  for (const [name, body, path] of cases) {
    it(`rejects ${name} with 400 invalid_request naming ${path}, writing nothing`, async () => {
      await expectNothingWritten(async () => {
        const res = await firmA.client.post('/api/v2/create-outbound-call', body());
        expectError(res, 400, 'invalid_request');
        expect(detailPaths(res)).toContain(path);
      });
    });
  }

  it('rejects more than 50 dynamic variables, and accepts exactly 50', async () => {
    const vars = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`v${i}`, i]));
    await expectNothingWritten(async () => {
      const tooMany = await firmA.client.post('/api/v2/create-outbound-call', {
        ...valid(),
        dynamicVariables: vars(51),
      });
      expectError(tooMany, 400, 'invalid_request');
      expect(detailPaths(tooMany)).toContain('/dynamicVariables');
    });
    const fifty = await firmA.client.post('/api/v2/create-outbound-call', {
      ...valid(),
      dynamicVariables: vars(50),
    });
    expect(fifty.status).toBe(200);
  });

  it('rejects a body that is not JSON (415) and an empty body (400)', async () => {
    await expectNothingWritten(async () => {
      const text = await firmA.client.request('POST', '/api/v2/create-outbound-call', {
        rawBody: 'toNumber=+14155550199',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      expectError(text, 415, 'unsupported_media_type');
      const empty = await firmA.client.post('/api/v2/create-outbound-call', {});
      expectError(empty, 400, 'invalid_request');
      expect(detailPaths(empty)).toEqual(expect.arrayContaining(['/toNumber', '/agentId', '/firmSlug']));
    });
  });

  it('needs a bearer token (401)', async () => {
    const res = await stack.api.post('/api/v2/create-outbound-call', valid());
    expectError(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('stores dynamic variables as strings and answers {call_id, status: "registered"} with the record already in MongoDB', async () => {
    const res = await firmA.client.post('/api/v2/create-outbound-call', {
      ...valid(),
      dynamicVariables: { first_name: 'Ann', age: 42, vip: true, score: 1.5 },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['call_id', 'status']);
    expect(res.body.status).toBe('registered');
    const stored = await callsOf(stack).findOne({ _id: res.body.call_id });
    expect(stored?.dynamic_variables).toEqual({ first_name: 'Ann', age: '42', vip: 'true', score: '1.5' });
    const read = await firmA.client.get(`/api/v2/get-call/${res.body.call_id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      call_id: res.body.call_id,
      agent_id: agentA,
      firm: firmA.slug,
      direction: 'outbound',
      to_number: '+14155550123',
      dynamic_variables: { first_name: 'Ann', age: '42', vip: 'true', score: '1.5' },
    });
    for (const field of [
      'from_number',
      'status',
      'start_timestamp',
      'end_timestamp',
      'duration_ms',
      'disconnection_reason',
      'transcript',
      'call_analysis',
      'created_at',
    ]) {
      expect(read.body).toHaveProperty(field);
    }
  });
});

describe('firm isolation', () => {
  it('a firm token may not create a call for another firm (403), nor use another firm’s agent (404)', async () => {
    const forB = await firmA.client.post('/api/v2/create-outbound-call', {
      ...valid(),
      firmSlug: firmB.slug,
      agentId: agentB,
    });
    expectError(forB, 403, 'forbidden');
    const foreignAgent = await firmA.client.post('/api/v2/create-outbound-call', {
      ...valid(),
      agentId: agentB,
    });
    expectError(foreignAgent, 404, 'agent_not_found');
    const unknownAgent = await firmA.client.post('/api/v2/create-outbound-call', {
      ...valid(),
      agentId: 'agent_nope',
    });
    expectError(unknownAgent, 404, 'agent_not_found');
    const unknownFirm = await stack.admin.post('/api/v2/create-outbound-call', {
      ...valid(),
      firmSlug: 'no-such-firm',
    });
    expectError(unknownFirm, 404, 'firm_not_found');
    expect(await callsOf(stack).countDocuments({ firm: firmB.slug })).toBe(0);
  });

  it("get-call of another firm's call is 404 call_not_found; the platform key reads any", async () => {
    const created = await firmB.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: agentB,
      firmSlug: firmB.slug,
    });
    expect(created.status).toBe(200);
    const id = created.body.call_id;
    expectError(await firmA.client.get(`/api/v2/get-call/${id}`), 404, 'call_not_found');
    expectError(await firmA.client.get('/api/v2/get-call/call_does_not_exist'), 404, 'call_not_found');
    expect((await firmB.client.get(`/api/v2/get-call/${id}`)).status).toBe(200);
    expect((await stack.admin.get(`/api/v2/get-call/${id}`)).body.firm).toBe(firmB.slug);
  });
});

describe('Idempotency-Key', () => {
  const dialsFor = (callId: string) => simulatorCallsOf(stack).countDocuments({ 'metadata.call_id': callId });

  it('a repeat with the same key returns the same call_id and places one call', async () => {
    const headers = { 'Idempotency-Key': `seq-${Date.now()}` };
    const first = await firmA.client.post('/api/v2/create-outbound-call', valid(), headers);
    const second = await firmA.client.post('/api/v2/create-outbound-call', valid(), headers);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await callsOf(stack).countDocuments({ _id: first.body.call_id })).toBe(1);
    await waitForCall(firmA.client, first.body.call_id, (c) => c.status === 'ended');
    expect(await dialsFor(first.body.call_id)).toBe(1);
    // A third repeat after the call finished still gives the same call and no new dial.
    const third = await firmA.client.post('/api/v2/create-outbound-call', valid(), headers);
    expect(third.body.call_id).toBe(first.body.call_id);
    expect(await dialsFor(first.body.call_id)).toBe(1);
  });

  it('a repeat after the agent was deleted still gets the same call_id (looked up before the checks)', async () => {
    const agent = await createAgent(firmA.client, firmA.slug);
    const headers = { 'Idempotency-Key': `gone-agent-${Date.now()}` };
    const body = { ...valid(), agentId: agent };
    const first = await firmA.client.post('/api/v2/create-outbound-call', body, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await firmA.client.delete(`/api/v2/delete-agent/${agent}`)).status).toBe(200);
    const repeat = await firmA.client.post('/api/v2/create-outbound-call', body, headers);
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    // Without the key the agent is gone: 404.
    const fresh = await firmA.client.post('/api/v2/create-outbound-call', body);
    expect(fresh.status).toBe(404);
  });

  it('concurrent repeats with one key create one call and one provider dial', async () => {
    const before = await callsOf(stack).countDocuments({ firm: firmA.slug });
    const headers = { 'Idempotency-Key': `conc-${Date.now()}` };
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => firmA.client.post('/api/v2/create-outbound-call', valid(), headers)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200));
    const ids = new Set(responses.map((r) => r.body.call_id));
    expect(ids.size).toBe(1);
    const [callId] = [...ids] as [string];
    expect(await callsOf(stack).countDocuments({ firm: firmA.slug })).toBe(before + 1);
    await waitForCall(firmA.client, callId, (c) => c.status === 'ended');
    expect(await dialsFor(callId)).toBe(1);
  });

  it('keys are per firm, and different keys make different calls', async () => {
    const key = `shared-${Date.now()}`;
    const a = await firmA.client.post('/api/v2/create-outbound-call', valid(), { 'Idempotency-Key': key });
    const b = await firmB.client.post(
      '/api/v2/create-outbound-call',
      { toNumber: '+14155550123', agentId: agentB, firmSlug: firmB.slug },
      { 'Idempotency-Key': key },
    );
    const a2 = await firmA.client.post('/api/v2/create-outbound-call', valid(), {
      'Idempotency-Key': `${key}-2`,
    });
    expect(new Set([a.body.call_id, b.body.call_id, a2.body.call_id]).size).toBe(3);
  });

  it('a key older than 24 h starts a new call, and concurrent repeats still share exactly one', async () => {
    const key = `expired-${Date.now()}`;
    const longAgo = new Date(Date.now() - 25 * 3600 * 1000);
    await stack.services.mongo.db.collection(COLLECTIONS.idempotencyKeys).insertOne({
      _id: `create-outbound-call|${firmA.slug}|${key}` as never,
      scope: 'create-outbound-call',
      firm: firmA.slug,
      key,
      resource_id: 'call_from_yesterday',
      state: 'done',
      created_at: longAgo,
      updated_at: longAgo,
    });
    const before = await callsOf(stack).countDocuments({ firm: firmA.slug });
    const responses = await Promise.all(
      Array.from({ length: 6 }, () =>
        firmA.client.post('/api/v2/create-outbound-call', valid(), { 'Idempotency-Key': key }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200));
    const ids = new Set(responses.map((r) => r.body.call_id));
    expect(ids.size).toBe(1);
    expect(ids.has('call_from_yesterday')).toBe(false);
    expect(await callsOf(stack).countDocuments({ firm: firmA.slug })).toBe(before + 1);
  });

  it('a key left pending by a request that died: 409 idempotency_key_in_use with Retry-After until it is stale, then the call', async () => {
    const key = `pending-${Date.now()}`;
    const keys = stack.services.mongo.db.collection(COLLECTIONS.idempotencyKeys);
    // As a first request leaves it when it dies between claiming the key and creating its call
    // (its cleanup could not reach MongoDB): pending, 40 s old, its call never made.
    const fortySecondsAgo = new Date(Date.now() - 40_000);
    await keys.insertOne({
      _id: `create-outbound-call|${firmA.slug}|${key}` as never,
      scope: 'create-outbound-call',
      firm: firmA.slug,
      key,
      resource_id: 'call_never_made',
      state: 'pending',
      created_at: fortySecondsAgo,
      updated_at: fortySecondsAgo,
    });
    const busy = await firmA.client.post('/api/v2/create-outbound-call', valid(), { 'Idempotency-Key': key });
    expectError(busy, 409, 'idempotency_key_in_use');
    // When the pending key will be judged abandoned (60 s after it was made): about 10 s from now.
    const retryAfter = Number(busy.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(21);
    // A retry once that time has passed (moved back here rather than waited for) makes the call.
    const stale = new Date(Date.now() - 61_000);
    await keys.updateOne(
      { _id: `create-outbound-call|${firmA.slug}|${key}` as never },
      { $set: { created_at: stale } },
    );
    const retried = await firmA.client.post('/api/v2/create-outbound-call', valid(), {
      'Idempotency-Key': key,
    });
    expect(retried.status).toBe(200);
    expect(retried.body.call_id).not.toBe('call_never_made');
  });

  it('rejects a malformed key', async () => {
    const res = await firmA.client.post('/api/v2/create-outbound-call', valid(), {
      'Idempotency-Key': 'x'.repeat(256),
    });
    expectError(res, 400, 'invalid_request');
  });
});

describe('with Redis unreachable', () => {
  let down: Stack;
  beforeAll(async () => {
    down = await startStack({ env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
  });
  afterAll(async () => down?.stop());

  it('answers 503 and leaves neither a call nor an idempotency key behind', async () => {
    const firm = await createFirm(down);
    const agentId = await createAgent(firm.client, firm.slug);
    const res = await firm.client.post(
      '/api/v2/create-outbound-call',
      { toNumber: '+14155550123', agentId, firmSlug: firm.slug },
      { 'Idempotency-Key': 'during-outage' },
    );
    expectError(res, 503, 'unavailable');
    const db = down.services.mongo.db;
    await eventually(async () => {
      expect(await db.collection(COLLECTIONS.calls).countDocuments({})).toBe(0);
      expect(await db.collection(COLLECTIONS.idempotencyKeys).countDocuments({})).toBe(0);
    });
  });
});
