// Every number the service dials is a possible number for
// its country (libphonenumber-js) and in a country of the firm's allowed_call_countries (default
// US and CA). The rule lives in registerOutboundCall, which every dial goes through; the number
// rule itself (parseDialable) is tested in test/unit/phones.test.ts.
import { changeCached } from '../../core/platform/db/read-cache.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { callsOf, createAgent } from '../calls/support.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => stack?.stop());

const UK = '+442071234567';
const CANADA = '+14165550123';
const call = (toNumber: string, headers?: Record<string, string>) =>
  firm.client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug: firm.slug }, headers);
const callCount = () => callsOf(stack).countDocuments({ firm: firm.slug });

describe('create-outbound-call destinations', () => {
  it('a UK number with the default setting: 400 destination_not_allowed, no call stored', async () => {
    const before = await callCount();
    const res = await call(UK);
    expectError(res, 400, 'destination_not_allowed');
    expect(detailPaths(res)).toEqual(['/toNumber']);
    // With an Idempotency-Key too, and a repeat does not turn into a success.
    for (let i = 0; i < 2; i++)
      expectError(await call(UK, { 'Idempotency-Key': 'uk-1' }), 400, 'destination_not_allowed');
    expect(await callCount()).toBe(before);
    expect(await stack.services.queues.calls.getJobCounts()).toMatchObject({ waiting: 0, delayed: 0 });
  });

  it('a Canadian number is accepted by default', async () => {
    const res = await call(CANADA);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await firm.client.get(`/api/v2/get-call/${res.body.call_id}`)).body.to_number).toBe(CANADA);
  });

  // Too short for +1, no calling code 999, too short for +44, and +882 a non-geographic code:
  // possible for no country.
  it.each(['+1212555', '+99912345678', '+4412345678', '+882123456789'])(
    'an impossible number %s is 400 invalid_request at /toNumber',
    async (n) => {
      const before = await callCount();
      const res = await call(n);
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toEqual(['/toNumber']);
      expect(await callCount()).toBe(before);
    },
  );

  // Possible numbers (libphonenumber-js) it names no country for, as test writers use them: +1 555
  // (the simulator's rules key on the last four digits), +1 999, the UK's drama range.
  it.each(['+15555550000', '+15555550123', '+19999999999'])(
    'a possible +1 number of an area code no country uses, %s, is in the US: 200 registered',
    async (n) => {
      const res = await call(n);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ call_id: expect.any(String), status: 'registered' });
      const stored = (await firm.client.get(`/api/v2/get-call/${res.body.call_id}`)).body;
      expect(stored).toMatchObject({ to_number: n, status: 'registered' });
    },
  );

  it('a possible UK number of no area libphonenumber names (+44 7700 900…) is in GB: 400 destination_not_allowed', async () => {
    const before = await callCount();
    const res = await call('+447700900123');
    expect(expectError(res, 400, 'destination_not_allowed')).toEqual([
      { path: '/toNumber', message: 'is in GB, which is not in allowed_call_countries' },
    ]);
    expect(await callCount()).toBe(before);
  });

  it('after PATCHing allowed_call_countries ["US", "GB"] the UK number is accepted (and Canada no longer)', async () => {
    // Adding a country is the platform's (test/hardening/toll-fraud.test.ts).
    const patched = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { allowed_call_countries: ['US', 'GB'] },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.settings.allowed_call_countries).toEqual(['US', 'GB']);
    const res = await call(UK);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await call('+447700900123')).status).toBe(200);
    expectError(await call(CANADA), 400, 'destination_not_allowed');
    expect((await call('+14155550123')).status).toBe(200);

    // null restores the default.
    const reset = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { allowed_call_countries: null },
    });
    expect(reset.body.settings.allowed_call_countries).toEqual(['US', 'CA']);
    expectError(await call(UK), 400, 'destination_not_allowed');
  });

  it('an empty list allows no destination', async () => {
    const other = await createFirm(stack, { allowed_call_countries: [] });
    const otherAgent = await createAgent(other.client, other.slug);
    const res = await other.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId: otherAgent,
      firmSlug: other.slug,
    });
    expectError(res, 400, 'destination_not_allowed');
  });
});

describe('allowed_call_countries validation', () => {
  it.each([
    ['an unknown code "XX"', ['XX'], '/settings/allowed_call_countries/0'],
    ['an unknown code after a known one', ['US', 'ZZ'], '/settings/allowed_call_countries/1'],
    ['lower case "us"', ['us'], '/settings/allowed_call_countries/0'],
    ['three letters', ['USA'], '/settings/allowed_call_countries/0'],
    ['a repeated code', ['US', 'US'], '/settings/allowed_call_countries'],
    ['a string, not an array', 'US', '/settings/allowed_call_countries'],
    ['a number', [1], '/settings/allowed_call_countries/0'],
    ['251 codes', Array.from({ length: 251 }, (_, i) => `A${i}`), '/settings/allowed_call_countries'],
  ])('PATCH with %s is 400 invalid_request at %s, changing nothing', async (_what, value, path) => {
    const res = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { allowed_call_countries: value },
    });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toContain(path);
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.settings.allowed_call_countries).toEqual([
      'US',
      'CA',
    ]);
  });

  it('a firm stored before the setting existed reads, and dials, with the default', async () => {
    const old = await createFirm(stack);
    const db = stack.services.mongo.db;
    // Written around the API, as an old record would be: through changeCached, as every writer.
    await changeCached(db, () =>
      db
        .collection('firms')
        .updateOne({ _id: old.slug as never }, { $unset: { 'settings.allowed_call_countries': '' } }),
    );
    expect((await old.client.get(`/api/firms/${old.slug}`)).body.settings.allowed_call_countries).toEqual([
      'US',
      'CA',
    ]);
    const oldAgent = await createAgent(old.client, old.slug);
    const dial = (toNumber: string) =>
      old.client.post('/api/v2/create-outbound-call', { toNumber, agentId: oldAgent, firmSlug: old.slug });
    expect((await dial(CANADA)).status).toBe(200);
    expectError(await dial(UK), 400, 'destination_not_allowed');
  });
});
