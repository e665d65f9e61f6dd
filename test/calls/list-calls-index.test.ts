// list-calls' index (core/domain/calls/call-list-index.ts): the job that ends a call gives it its
// place in the firm's sorted set, a retried job repairs a place lost to a crash, a call ending
// late with an older end time lands where it belongs in a walk under way, calls ended before the
// index existed (or a set Redis lost) are rebuilt from MongoDB, and one firm's set never serves
// another firm's call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOutboundCall, type CallDoc } from '../../core/domain/calls/calls.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { encodeCursor } from '../../core/platform/db/keyset-cursor.js';
import { listMember, recordFinishedCall } from '../../core/domain/calls/call-list-index.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { callsOf, createAgent } from './support.js';

const SECRET = 'whsec_list_calls_index_secret';
const T0 = 1_760_000_000_000;

let stack: Stack;
type Firm = Awaited<ReturnType<typeof createFirm>> & { agentId: string };

beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => stack?.stop());

async function firmWithAgent(): Promise<Firm> {
  const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  return { ...firm, agentId: await createAgent(firm.client, firm.slug) };
}

/** One of our outbound calls as stored: registered, or finished at `end` (no list entry written). */
async function storedCall(firm: Firm, end: number | null): Promise<CallDoc> {
  const db = stack.services.mongo.db;
  const firmDoc = (await getFirm(db, firm.slug))!;
  const agent = (await db.collection<AgentDoc>(COLLECTIONS.agents).findOne({ _id: firm.agentId }))!;
  const doc = newOutboundCall({ firm: firmDoc, agent, toNumber: '+14155550123' }, 'retell');
  const call: CallDoc =
    end === null
      ? doc
      : {
          ...doc,
          status: 'ended',
          status_rank: 2,
          finished: true,
          end_timestamp: end,
          start_timestamp: end - 60_000,
        };
  await callsOf(stack).insertOne(call);
  return call;
}

/** Retell's call_ended for our call, signed, through the webhook route (a worker applies it). */
async function deliverCallEnded(firm: Firm, callId: string, end: number, providerId = `p_${rand()}`) {
  const raw = JSON.stringify({
    event: 'call_ended',
    call: {
      call_id: providerId,
      call_type: 'phone_call',
      agent_id: 'retell_agent_1',
      direction: 'outbound',
      call_status: 'ended',
      disconnection_reason: 'user_hangup',
      start_timestamp: end - 90_000,
      end_timestamp: end,
      metadata: { call_id: callId, firm: firm.slug },
    },
  });
  const res = await stack.api.request('POST', `/api/v2/${firm.slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
  });
  expect(res.status).toBe(200);
}

const listKey = (firm: { slug: string }) => redisKeys(stack.config).callList(firm.slug);
const list = (firm: Firm, limit: number, cursor = '') =>
  firm.client.post('/api/v2/list-calls', { firmSlug: firm.slug, limit, cursor });

async function walk(firm: Firm, limit: number, between?: (page: number) => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  for (let page = 1; page < 200; page++) {
    const res = await list(firm, limit, cursor);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...res.body.calls.map((c: { call_id: string }) => c.call_id));
    cursor = res.body.next_cursor;
    if (cursor === '') return ids;
    await between?.(page);
  }
  throw new Error('the walk did not end');
}

const inListOrder = (calls: Array<Pick<CallDoc, '_id' | 'end_timestamp'>>) =>
  [...calls]
    .sort((a, b) => b.end_timestamp! - a.end_timestamp! || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0))
    .map((c) => c._id);

describe('list-calls index: written by the job that ends a call', () => {
  it('a call_ended job gives the call its place; a retried job repairs a place lost to a crash', async () => {
    const firm = await firmWithAgent();
    const older = await storedCall(firm, T0);
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([older._id]);

    const ended = await storedCall(firm, null);
    await deliverCallEnded(firm, ended._id, T0 + 5_000);
    await eventually(async () =>
      expect(
        await stack.services.redis.zscore(listKey(firm), listMember({ t: T0 + 5_000, i: ended._id })),
      ).toBe('0'),
    );
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([ended._id, older._id]);

    // A worker that died between the call's write and its entry's: the call is ended in
    // MongoDB, the firm's (complete) set has no place for it, so the list does not show it...
    const crashed = await storedCall(firm, T0 + 2_000);
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([ended._id, older._id]);
    // ...until the job runs again: the event finds the call ended already and still adds it.
    await deliverCallEnded(firm, crashed._id, T0 + 2_000);
    await eventually(async () =>
      expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([
        ended._id,
        crashed._id,
        older._id,
      ]),
    );
    expect((await callsOf(stack).findOne({ _id: crashed._id }))?.end_timestamp).toBe(T0 + 2_000);
  });

  it('a call get-call shows finished is in list-calls from then on, before its ending job adds its place', async () => {
    const firm = await firmWithAgent();
    const listed = await storedCall(firm, T0);
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([listed._id]);
    // The ending job's state between the call's write and its place's add: ended in MongoDB, no place.
    const ending = await storedCall(firm, T0 + 1_000);
    const shown = await firm.client.get(`/api/v2/get-call/${ending._id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.status).toBe('ended');
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([ending._id, listed._id]);
    // A call not finished is not listed by being read.
    const ongoing = await storedCall(firm, null);
    expect((await firm.client.get(`/api/v2/get-call/${ongoing._id}`)).body.status).toBe('registered');
    expect(await stack.services.redis.zcard(listKey(firm))).toBe(3); // two calls and the ready mark
  });

  it("a place-call job that finds its call failed already (an attempt died after marking it) adds the call's place", async () => {
    const firm = await firmWithAgent();
    const listed = await storedCall(firm, T0);
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([listed._id]);
    // What markDialFailed wrote before the attempt died, without its end hook.
    const failed = await storedCall(firm, null);
    const ended = {
      status: 'error' as const,
      status_rank: 2,
      finished: true,
      end_timestamp: T0 + 3_000,
      disconnection_reason: 'dial_failed',
    };
    await callsOf(stack).updateOne({ _id: failed._id }, { $set: ended });
    expect((await list(firm, 10)).body.calls).toHaveLength(1);
    await enqueue(stack.services.queues, JOBS.placeCall, { callId: failed._id, firm: firm.slug });
    await eventually(async () =>
      expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual([failed._id, listed._id]),
    );
  });

  it('a call ending late with an older end time lands in its place in a walk under way; a newer one heads the next listing', async () => {
    const firm = await firmWithAgent();
    // 30 calls, two per end time, so ties straddle page boundaries.
    const stored: CallDoc[] = [];
    for (let k = 0; k < 30; k++) stored.push(await storedCall(firm, T0 - Math.floor(k / 2) * 1000));
    const lateOld = await storedCall(firm, null);
    const lateNew = await storedCall(firm, null);
    const lateOldEnd = T0 - 11_000; // two calls end at T0 - 11 s already: it ties with them
    const ids = await walk(firm, 4, async (page) => {
      if (page !== 2) return;
      await deliverCallEnded(firm, lateOld._id, lateOldEnd);
      await deliverCallEnded(firm, lateNew._id, T0 + 60_000);
      await eventually(async () => {
        for (const [c, t] of [
          [lateOld, lateOldEnd],
          [lateNew, T0 + 60_000],
        ] as const) {
          expect(await stack.services.redis.zscore(listKey(firm), listMember({ t, i: c._id }))).toBe('0');
        }
      });
    });
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(inListOrder([...stored, { _id: lateOld._id, end_timestamp: lateOldEnd }]));
    const fresh = await list(firm, 2);
    expect(fresh.body.calls.map((c: any) => c.call_id)).toEqual([
      lateNew._id,
      stored[0]!._id < stored[1]!._id ? stored[1]!._id : stored[0]!._id,
    ]);
  });
});

describe('list-calls index: rebuilt from MongoDB', () => {
  it('lists calls that ended before the index existed, beside one a job has added since, in order', async () => {
    const firm = await firmWithAgent();
    const before: CallDoc[] = [];
    for (let k = 0; k < 40; k++) before.push(await storedCall(firm, T0 - (k % 13) * 1000));
    for (let k = 0; k < 5; k++) await storedCall(firm, null);
    // Since the deploy a job has ended one call: the set exists, but it is not complete.
    const since = await storedCall(firm, T0 + 1_000);
    await recordFinishedCall(stack.services, since);
    expect(await stack.services.redis.zcard(listKey(firm))).toBe(1);

    expect(await walk(firm, 15)).toEqual(inListOrder([since, ...before]));
    expect(await stack.services.redis.zcard(listKey(firm))).toBe(42); // 41 calls and the ready mark
    expect(await stack.services.redis.pttl(listKey(firm))).toBeGreaterThan(0);
  });

  it('rebuilds a set Redis lost; listings asking at the same time all get the same page', async () => {
    const firm = await firmWithAgent();
    const calls: CallDoc[] = [];
    for (let k = 0; k < 25; k++) calls.push(await storedCall(firm, T0 - k * 500));
    const expected = inListOrder(calls).slice(0, 10);
    expect((await list(firm, 10)).body.calls.map((c: any) => c.call_id)).toEqual(expected);

    await stack.services.redis.del(listKey(firm));
    const pages = await Promise.all(Array.from({ length: 6 }, () => list(firm, 10)));
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.body.calls.map((c: any) => c.call_id)).toEqual(expected);
    }
    expect(await stack.services.redis.zcard(listKey(firm))).toBe(26);
    // A cursor issued before the loss still continues where it was.
    const first = await list(firm, 10);
    await stack.services.redis.del(listKey(firm));
    const second = await list(firm, 10, first.body.next_cursor);
    expect(second.body.calls.map((c: any) => c.call_id)).toEqual(inListOrder(calls).slice(10, 20));
  });
  it('serves pages from MongoDB while another process builds the set, and builds it once that one is done', async () => {
    const firm = await firmWithAgent();
    const calls: CallDoc[] = [];
    for (let k = 0; k < 12; k++) calls.push(await storedCall(firm, T0 - k * 700));
    const lock = redisKeys(stack.config).callListBuildLock(firm.slug);
    await stack.services.redis.set(lock, 'another-process', 'PX', 60_000);
    try {
      const ids = await walk(firm, 5);
      expect(ids).toEqual(inListOrder(calls));
      expect(await stack.services.redis.zscore(listKey(firm), '~')).toBeNull();
    } finally {
      await stack.services.redis.del(lock);
    }
    expect(await walk(firm, 5)).toEqual(inListOrder(calls));
    expect(await stack.services.redis.zscore(listKey(firm), '~')).toBe('0');
  });
});

describe('list-calls index: firms and cursors', () => {
  it("keeps each firm's calls to itself, even with an entry that names another firm's call", async () => {
    const a = await firmWithAgent();
    const b = await firmWithAgent();
    const aCalls: CallDoc[] = [];
    const bCalls: CallDoc[] = [];
    for (let k = 0; k < 6; k++) {
      aCalls.push(await storedCall(a, T0 - k * 1000));
      bCalls.push(await storedCall(b, T0 - k * 1000));
    }
    expect(await walk(a, 4)).toEqual(inListOrder(aCalls));
    expect(await walk(b, 4)).toEqual(inListOrder(bCalls));
    const members = await stack.services.redis.zrange(listKey(a), '0', '-1');
    expect(
      members
        .filter((m) => m !== '~')
        .map((m) => m.split('|')[1])
        .sort(),
    ).toEqual(aCalls.map((c) => c._id).sort());

    // A corrupt entry: B's call (and an unfinished call of A) placed in A's set.
    const unfinished = await storedCall(a, null);
    await stack.services.redis.zadd(listKey(a), 0, listMember({ t: T0 + 9_000, i: bCalls[0]!._id }));
    await stack.services.redis.zadd(listKey(a), 0, listMember({ t: T0 + 8_000, i: unfinished._id }));
    const page = await list(a, 10);
    expect(page.body.calls.map((c: any) => c.call_id)).toEqual(inListOrder(aCalls));
    expect(page.body.calls.every((c: any) => c.firm === a.slug)).toBe(true);
  });

  it('rejects a signed cursor whose position cannot be a place in the list', async () => {
    const firm = await firmWithAgent();
    await storedCall(firm, T0);
    const secret = stack.config.sessionSecret;
    for (const p of [
      { t: 1.5, i: 'call_x' },
      { t: -1, i: 'call_x' },
      { t: 10 ** 15, i: 'call_x' },
      { t: '17', i: 'call_x' },
      { t: 17, i: 17 },
      { t: 17 },
    ]) {
      const cursor = encodeCursor(secret, 'list-calls', firm.slug, p as Record<string, string | number>);
      expectError(await list(firm, 5, cursor), 400, 'invalid_cursor');
    }
    const good = encodeCursor(secret, 'list-calls', firm.slug, { t: T0 + 1, i: '' });
    expect((await list(firm, 5, good)).body.calls).toHaveLength(1);
  });
});
