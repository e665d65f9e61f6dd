// list-calls while Redis is stopped: its index (a Redis sorted set) cannot be read, and the page
// comes from MongoDB instead, in the same order and with the same cursors, as it did before the
// index existed; once Redis is back the index serves again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { newOutboundCall, type CallDoc } from '../../core/domain/calls/calls.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { callsOf } from '../calls/support.js';

const T0 = 1_760_000_000_000;
let redis: PrivateRedis;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let expected: string[];

beforeAll(async () => {
  // A private Redis, so stopping it does not disturb test files running in parallel.
  redis = await startPrivateRedis();
  stack = await startStack({ env: { REDIS_URL: redis.url } });
  firm = await createFirm(stack);
  const firmDoc = (await getFirm(stack.services.mongo.db, firm.slug))!;
  const calls: CallDoc[] = Array.from({ length: 5 }, (_, k) => ({
    ...newOutboundCall(
      { firm: firmDoc, agent: { _id: 'agent_x' } as AgentDoc, toNumber: '+14155550123' },
      'retell',
    ),
    status: 'ended' as const,
    status_rank: 2,
    finished: true,
    end_timestamp: T0 - k * 1000,
  }));
  await callsOf(stack).insertMany(calls);
  expected = calls.map((c) => c._id);
});

afterAll(async () => {
  await stack?.stop();
  await redis?.remove();
});

async function walk(): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  do {
    const res = await firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug, limit: 2, cursor });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...res.body.calls.map((c: { call_id: string }) => c.call_id));
    cursor = res.body.next_cursor;
  } while (cursor !== '');
  return ids;
}

describe('list-calls during a Redis outage', () => {
  it('pages from MongoDB while Redis is stopped, and from its index again once Redis is back', async () => {
    expect(await walk()).toEqual(expected);
    const key = redisKeys(stack.config).callList(firm.slug);
    expect(await stack.services.redis.zcard(key)).toBe(6); // five calls and the ready mark
    // A cursor issued by the index, used during the outage.
    const first = await firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug, limit: 2 });

    await redis.stop();
    await eventually(async () => expect(stack.services.redis.status).not.toBe('ready'));
    expect(await walk()).toEqual(expected);
    const next = await firm.client.post('/api/v2/list-calls', {
      firmSlug: firm.slug,
      limit: 2,
      cursor: first.body.next_cursor,
    });
    expect(next.body.calls.map((c: { call_id: string }) => c.call_id)).toEqual(expected.slice(2, 4));

    await redis.start();
    await eventually(async () => expect(stack.services.redis.status).toBe('ready'), 20_000);
    expect(await walk()).toEqual(expected);
  });
});
