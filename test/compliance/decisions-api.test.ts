import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, createFirm, type Stack } from '../helpers/stack.js';
import { createAgent } from '../calls/support.js';
import { eventually } from '../helpers/eventually.js';
import { clock } from '../../core/platform/clock.js';
import { dncCollection, dncId } from '../../core/domain/compliance/dnc-store.js';
import { zonedTimeToUtc } from '../../core/platform/time-zone.js';

// GET /api/compliance/decisions (keyset pages, filters, firm isolation) and its streamed export,
// over decisions made by create-outbound-call with the default hours and a set gate clock.

let stack: Stack;
const ZONE = 'America/New_York';
const nyAt = (minutes: number): number => zonedTimeToUtc({ year: 2026, month: 6, day: 17 }, minutes, ZONE);
let a: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
let b: Awaited<ReturnType<typeof createFirm>> & { agentId: string };
const numbers = ['+12125557001', '+12125557002', '+12125557003'];

async function call(firm: typeof a, toNumber: string): Promise<number> {
  const res = await firm.client.post('/api/v2/create-outbound-call', {
    firmSlug: firm.slug,
    agentId: firm.agentId,
    toNumber,
  });
  return res.status;
}

beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { CALLING_HOURS: '08:00-21:00', DIAL_ATTEMPTS_PER_DAY: '3', COMPLIANCE_STATE_RULES: 'true' },
  });
  const firmA = await createFirm(stack, { timezone: ZONE });
  a = { ...firmA, agentId: await createAgent(firmA.client, firmA.slug) };
  const firmB = await createFirm(stack, { timezone: ZONE });
  b = { ...firmB, agentId: await createAgent(firmB.client, firmB.slug) };
  await dncCollection(stack.services.mongo.db).insertOne({
    _id: dncId(a.slug, numbers[2]!),
    firm: a.slug,
    phone: numbers[2]!,
    source: 'api',
    reason: null,
    added_at: new Date(),
    added_by: 'test',
  });
  clock.set(nyAt(6 * 60)); // 06:00: deferred
  expect(await call(a, numbers[0]!)).toBe(409);
  clock.set(nyAt(10 * 60)); // 10:00: allowed, dialled (recorded at the dial stage)
  expect(await call(a, numbers[0]!)).toBe(200);
  expect(await call(a, numbers[1]!)).toBe(200);
  expect(await call(a, numbers[2]!)).toBe(409); // dnc
  expect(await call(b, numbers[0]!)).toBe(200);
  // The allowed calls' decisions are their dial-stage ones, taken by the workers.
  await eventually(async () => {
    const count = await stack.services.mongo.db.collection('dial_decisions').countDocuments({});
    expect(count).toBe(5);
  });
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
});

describe('GET /api/compliance/decisions', () => {
  it("pages a firm's decisions newest first with a keyset cursor, none repeated or skipped", async () => {
    const seen: any[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page++) {
      const res = await a.client.get(
        `/api/compliance/decisions?firmSlug=${a.slug}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      seen.push(...res.body.decisions);
      cursor = res.body.next_cursor;
      if (cursor === '') break;
    }
    expect(seen).toHaveLength(4);
    expect(new Set(seen.map((d) => d.id)).size).toBe(4);
    expect(seen.every((d) => d.firm === a.slug)).toBe(true);
    const ats = seen.map((d) => Date.parse(d.at));
    expect([...ats].sort((x, y) => y - x)).toEqual(ats);
    const byPhone = (d: any) => `${d.phone} ${d.stage} ${d.answer} ${d.reason}`;
    expect(seen.map(byPhone).sort()).toEqual(
      [
        `${numbers[0]} request defer hours`,
        `${numbers[0]} dial allow null`,
        `${numbers[1]} dial allow null`,
        `${numbers[2]} request block dnc`,
      ].sort(),
    );
    // The oldest: the deferral at 06:00.
    expect(seen[3]).toMatchObject({
      stage: 'request',
      retry_at: new Date(nyAt(8 * 60)).toISOString(),
      zones: [{ zone: ZONE, local: '2026-06-17 06:00 (Wed)', allowed: false }],
      attempts_cap: 3,
    });
  });

  it('filters by phone and by time, and keeps firms apart', async () => {
    const onePhone = await a.client.get(`/api/compliance/decisions?firmSlug=${a.slug}&phone=%2B12125557001`);
    expect(onePhone.body.decisions.map((d: any) => d.answer)).toEqual(['allow', 'defer']);
    expect(onePhone.body.decisions[0]).toMatchObject({ stage: 'dial', attempts: 1, attempts_cap: 3 });
    const from = new Date(nyAt(9 * 60)).toISOString();
    const later = await a.client.get(`/api/compliance/decisions?firmSlug=${a.slug}&from=${from}`);
    expect(later.body.decisions).toHaveLength(3);
    const before = await a.client.get(`/api/compliance/decisions?firmSlug=${a.slug}&to=${from}`);
    expect(before.body.decisions).toHaveLength(1);
    const own = await b.client.get('/api/compliance/decisions');
    expect(own.status).toBe(200);
    expect(own.body.decisions.map((d: any) => d.firm)).toEqual([b.slug]);
    const other = await b.client.get(`/api/compliance/decisions?firmSlug=${a.slug}`);
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('forbidden');
  });

  it('refuses bad queries with a 400 in the error shape', async () => {
    for (const query of [
      'limit=0',
      'limit=abc',
      'phone=123',
      'from=yesterday',
      // A leap second: RFC 3339 has it, JavaScript's Date does not (it filtered nothing, a 200).
      'from=2026-06-30T23:59:60Z',
      'to=2026-06-30T23:59:60Z',
      'cursor=forged.cursor',
      'format=xml',
    ]) {
      const path = query.startsWith('format')
        ? `/api/compliance/decisions/export?firmSlug=${a.slug}&${query}`
        : `/api/compliance/decisions?firmSlug=${a.slug}&${query}`;
      const res = await a.client.get(path);
      expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.code).toMatch(/^invalid_/);
    }
    const cursor = (await a.client.get(`/api/compliance/decisions?firmSlug=${a.slug}&limit=1`)).body
      .next_cursor;
    const elsewhere = await b.client.get(`/api/compliance/decisions?cursor=${encodeURIComponent(cursor)}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.code).toBe('invalid_cursor');
  });
});

describe('GET /api/compliance/decisions/export', () => {
  it('streams every decision as NDJSON, or as CSV with a header row', async () => {
    const ndjson = await fetch(`${stack.baseUrl}/api/compliance/decisions/export?firmSlug=${a.slug}`, {
      headers: { Authorization: `Bearer ${a.key}` },
    });
    expect(ndjson.status).toBe(200);
    expect(ndjson.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await ndjson.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((d) => d.answer).sort()).toEqual(['allow', 'allow', 'block', 'defer']);
    expect(lines.at(-1)).toMatchObject({ answer: 'defer', reason: 'hours' });

    const csv = await fetch(
      `${stack.baseUrl}/api/compliance/decisions/export?firmSlug=${a.slug}&format=csv`,
      {
        headers: { Authorization: `Bearer ${a.key}` },
      },
    );
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const rows = (await csv.text()).trim().split('\n');
    expect(rows[0]).toMatch(/^at,id,phone,call_id,campaign_id,stage,answer,reason,retry_at/);
    expect(rows).toHaveLength(5);
    expect(rows.filter((r) => r.includes(',block,dnc,'))).toHaveLength(1);

    // Both media types are the ones /openapi.json documents for the answer (the fuzzer's check).
    const doc = (await stack.api.get('/openapi.json')).body;
    const documented = Object.keys(
      doc.paths['/api/compliance/decisions/export'].get.responses['200'].content,
    );
    for (const answer of [ndjson, csv]) {
      expect(documented).toContain(answer.headers.get('content-type')!.split(';')[0]);
    }
  });
});
