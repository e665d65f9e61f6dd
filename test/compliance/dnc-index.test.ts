// The do-not-call list's Redis index (core/domain/compliance/dnc-index.ts): the request stage of
// the dial gate takes "not listed" from it while it is ready, and MongoDB stays the truth — an
// index that is not ready is rebuilt by a worker meanwhile the database answers; a number in the
// index is confirmed by the database (one taken off is removed from it then); a number the index
// missed is still blocked at the dial stage, before the provider is asked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createAgent, waitForCall } from '../calls/support.js';
import { simulatorDials } from '../campaigns/support.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { addDncEntry, dncCollection, dncId } from '../../core/domain/compliance/dnc-store.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: '200' } });
  firm = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => {
  await stack?.stop();
});

const keys = () => redisKeys(stack.config);
const call = (toNumber: string) =>
  firm.client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug: firm.slug });
const indexReady = async () => (await stack.services.redis.exists(keys().dncIndexReady(firm.slug))) === 1;
const inIndex = async (phone: string) =>
  (await stack.services.redis.sismember(keys().dncListed(firm.slug), phone)) === 1;

describe("the do-not-call list's index", () => {
  it('is rebuilt from the database when not ready, the database answering meanwhile', async () => {
    // Listed behind the API's back (as an index lost with Redis's data would be): the database has it.
    await addDncEntry(stack.services.mongo.db, firm.slug, '+12125550101', {
      source: 'api',
      reason: null,
      added_by: 'test',
    });
    expect(await indexReady()).toBe(false);
    const blocked = expectError(await call('+12125550101'), 409, 'dial_blocked');
    expect(JSON.stringify(blocked)).toContain('dnc');
    // The request asked for a rebuild; a worker streamed the list into the index and marked it ready.
    await eventually(async () => expect(await indexReady()).toBe(true));
    expect(await inIndex('+12125550101')).toBe(true);
    expectError(await call('+12125550101'), 409, 'dial_blocked');
  });

  it('a number added through the API is in the index at once and refused at the request', async () => {
    await eventually(async () => expect(await indexReady()).toBe(true));
    const added = await firm.client.post('/api/compliance/dnc', {
      firmSlug: firm.slug,
      phones: ['+12125550102'],
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(await inIndex('+12125550102')).toBe(true);
    expectError(await call('+12125550102'), 409, 'dial_blocked');
  });

  it('a number the index missed while ready is accepted at the request but blocked at the dial, never dialled', async () => {
    await eventually(async () => expect(await indexReady()).toBe(true));
    await addDncEntry(stack.services.mongo.db, firm.slug, '+12125550103', {
      source: 'api',
      reason: null,
      added_by: 'test',
    });
    const res = await call('+12125550103');
    // The index said "not listed": no database read at the request (the fast path).
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ended = await waitForCall(firm.client, res.body.call_id, (c) => c.status === 'error');
    expect(ended.disconnection_reason).toBe('dial_blocked');
    expect(await simulatorDials(stack, ['+12125550103'])).toHaveLength(0);
  });

  it('a number in the index the list no longer holds is confirmed by the database and removed from the index', async () => {
    await eventually(async () => expect(await indexReady()).toBe(true));
    await stack.services.redis.sadd(keys().dncListed(firm.slug), '+12125550104');
    expect(
      await dncCollection(stack.services.mongo.db).findOne({ _id: dncId(firm.slug, '+12125550104') }),
    ).toBeNull();
    const res = await call('+12125550104');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await inIndex('+12125550104')).toBe(false);
    await waitForCall(firm.client, res.body.call_id, (c) => c.status === 'ended');
    expect(await simulatorDials(stack, ['+12125550104'])).toHaveLength(1);
  });

  it('an opt-out said in a call is indexed with its listing', async () => {
    await eventually(async () => expect(await indexReady()).toBe(true));
    const res = await call('+12125553333');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await eventually(async () => expect(await inIndex('+12125553333')).toBe(true));
    expectError(await call('+12125553333'), 409, 'dial_blocked');
  });
});
