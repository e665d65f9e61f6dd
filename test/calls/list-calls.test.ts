// POST /api/v2/list-calls (docs/calls.md#list-calls): finished calls only, newest end_timestamp first
// with call_id descending on ties, keyset pages that neither repeat nor skip while calls keep
// finishing, an opaque cursor bound to the firm, next_cursor "" on the last page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOutboundCall, type CallDoc, type CallStatus } from '../../core/domain/calls/calls.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { DEFAULT_SETTINGS } from '../../core/domain/firms/firm-settings.js';
import type { FirmDoc } from '../../core/domain/firms/firms.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { callsOf } from './support.js';
import { recordFinishedCall } from '../../core/domain/calls/call-list-index.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;
const T0 = 1_750_000_000_000;

/** A call record as the service stores it, finished (or not) at `end`. */
function callRecord(firm: string, status: CallStatus, end: number | null): CallDoc {
  const firmDoc: FirmDoc = {
    _id: firm,
    name: firm,
    settings: DEFAULT_SETTINGS,
    created_at: new Date(),
    updated_at: new Date(),
  };
  const agent = { _id: 'agent_list' } as AgentDoc;
  const doc = newOutboundCall({ firm: firmDoc, agent, toNumber: '+14155550123' }, 'simulator');
  const finished = status === 'ended' || status === 'not_connected' || status === 'error';
  return {
    ...doc,
    status,
    status_rank: finished ? 2 : status === 'ongoing' ? 1 : 0,
    finished,
    end_timestamp: end,
    start_timestamp: end === null ? null : end - 60_000,
    duration_ms: end === null ? null : 60_000,
  };
}

const byEndThenIdDesc = (a: CallDoc, b: CallDoc) =>
  (b.end_timestamp ?? 0) - (a.end_timestamp ?? 0) ||
  (a.call_id < b.call_id ? 1 : a.call_id > b.call_id ? -1 : 0);

let original: CallDoc[];

beforeAll(async () => {
  stack = await startStack();
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
  const statuses: CallStatus[] = ['ended', 'not_connected', 'error'];
  // 250 finished calls in 50 end times of 5 calls each, so ties cross page boundaries.
  original = Array.from({ length: 250 }, (_, i) =>
    callRecord(firmA.slug, statuses[i % 3]!, T0 - Math.floor(i / 5) * 1000),
  );
  const unfinished = Array.from({ length: 20 }, (_, i) =>
    callRecord(firmA.slug, i % 2 ? 'registered' : 'ongoing', null),
  );
  const foreign = Array.from({ length: 10 }, (_, i) => callRecord(firmB.slug, 'ended', T0 - i * 1000));
  await callsOf(stack).insertMany([...original, ...unfinished, ...foreign]);
});
afterAll(async () => stack?.stop());

const list = (client: typeof firmA.client, body: Record<string, unknown>) =>
  client.post('/api/v2/list-calls', body);

describe('list-calls', () => {
  it('pages through 250 calls with limit 7 while calls keep finishing: no repeat, no gap, "" at the end', async () => {
    const seen: any[] = [];
    let cursor = '';
    let pages = 0;
    let lateIndex = 0;
    const unfinished = await callsOf(stack).find({ firm: firmA.slug, finished: false }).toArray();
    do {
      const res = await list(firmA.client, { firmSlug: firmA.slug, limit: 7, cursor });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['calls', 'next_cursor']);
      expect(res.body.calls.length).toBeLessThanOrEqual(7);
      seen.push(...res.body.calls);
      cursor = res.body.next_cursor;
      pages += 1;
      // Meanwhile: a brand-new call finishes, and a call that was ongoing finishes (each written,
      // then given its list entry, as the job that ends a call does).
      const fresh = callRecord(firmA.slug, 'ended', Date.now());
      await callsOf(stack).insertOne(fresh);
      await recordFinishedCall(stack.services, fresh);
      const late = unfinished[lateIndex++];
      if (late) {
        const ended = { status: 'ended' as const, status_rank: 2, finished: true, end_timestamp: Date.now() };
        await callsOf(stack).updateOne({ _id: late._id }, { $set: ended });
        await recordFinishedCall(stack.services, { ...late, ...ended });
      }
    } while (cursor !== '' && pages < 100);

    expect(pages).toBe(36); // 35 full pages and one of 5
    const ids = seen.map((c) => c.call_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...original].sort(byEndThenIdDesc).map((c) => c.call_id));
    expect(
      seen.every((c) => c.firm === firmA.slug && ['ended', 'not_connected', 'error'].includes(c.status)),
    ).toBe(true);
    expect(seen[0]).toMatchObject({ call_id: expect.any(String), end_timestamp: T0, direction: 'outbound' });

    // A new listing starts with the calls that finished meanwhile.
    const fresh = await list(firmA.client, { firmSlug: firmA.slug, limit: 5 });
    expect(fresh.body.calls.every((c: any) => c.end_timestamp > T0)).toBe(true);
  });

  it('defaults to 50 and ends with next_cursor "" exactly when the last page is full', async () => {
    const first = await list(firmA.client, { firmSlug: firmA.slug });
    expect(first.body.calls).toHaveLength(50);
    expect(first.body.next_cursor).not.toBe('');
    const p1 = await list(firmB.client, { firmSlug: firmB.slug, limit: 5 });
    expect(p1.body.calls).toHaveLength(5);
    const p2 = await list(firmB.client, { firmSlug: firmB.slug, limit: 5, cursor: p1.body.next_cursor });
    expect(p2.body.calls).toHaveLength(5);
    expect(p2.body.next_cursor).toBe('');
    expect(new Set([...p1.body.calls, ...p2.body.calls].map((c: any) => c.call_id)).size).toBe(10);
  });

  it('rejects a tampered cursor and a cursor from another firm with 400 invalid_cursor', async () => {
    const page = await list(firmA.client, { firmSlug: firmA.slug, limit: 3 });
    const cursor: string = page.body.next_cursor;
    const [payload, mac] = cursor.split('.') as [string, string];
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(
      JSON.stringify({ ...decoded, p: { ...decoded.p, t: decoded.p.t + 1 } }),
    ).toString('base64url');
    const tampered = [
      `${flip(payload, 5)}.${mac}`,
      `${payload}.${flip(mac, 3)}`,
      `${forged}.${mac}`,
      payload,
      'not-a-cursor',
      `${cursor}.extra`,
      // Longer than any cursor issued: invalid_cursor too, not the schema's invalid_request.
      `${payload}${'A'.repeat(3000)}.${mac}`,
    ];
    for (const bad of tampered) {
      const res = await list(firmA.client, { firmSlug: firmA.slug, limit: 3, cursor: bad });
      expectError(res, 400, 'invalid_cursor');
    }
    // Firm B's own valid cursor, replayed against firm A (by the platform) and the reverse.
    const bCursor = (await list(firmB.client, { firmSlug: firmB.slug, limit: 2 })).body.next_cursor;
    expectError(await list(stack.admin, { firmSlug: firmA.slug, cursor: bCursor }), 400, 'invalid_cursor');
    expectError(await list(firmB.client, { firmSlug: firmB.slug, cursor }), 400, 'invalid_cursor');
    // The untouched cursor still works.
    expect((await list(firmA.client, { firmSlug: firmA.slug, limit: 3, cursor })).status).toBe(200);
  });

  it('validates the body and the firm', async () => {
    for (const [body, path] of [
      [{ firmSlug: firmA.slug, limit: 0 }, '/limit'],
      [{ firmSlug: firmA.slug, limit: 1001 }, '/limit'],
      [{ firmSlug: firmA.slug, limit: 2.5 }, '/limit'],
      [{ firmSlug: firmA.slug, limit: '7' }, '/limit'],
      [{ firmSlug: firmA.slug, cursor: 7 }, '/cursor'],
      [{ limit: 5 }, '/firmSlug'],
      [{ firmSlug: { $ne: null } }, '/firmSlug'],
      [{ firmSlug: firmA.slug, firm_slug: 'x' }, '/firm_slug'],
    ] as Array<[Record<string, unknown>, string]>) {
      const res = await list(firmA.client, body);
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toContain(path);
    }
    expect((await list(firmA.client, { firmSlug: firmA.slug, limit: 1000 })).status).toBe(200);
    expectError(await list(firmB.client, { firmSlug: firmA.slug }), 403, 'forbidden');
    expectError(await list(stack.admin, { firmSlug: 'no-such-firm' }), 404, 'firm_not_found');
  });
});
