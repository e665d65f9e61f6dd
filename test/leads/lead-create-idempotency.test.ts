// POST /api/leads: the lead and its lead.created event, or neither, and an Idempotency-Key that
// makes a retried create one lead (docs/campaigns.md#leads). Before, a create whose event
// could not be recorded (Redis down) answered 503 with its lead stored, and the client's retry
// made a second lead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApiLead } from '../../core/domain/leads/leads.js';
import { leadCreatedEventId } from '../../core/domain/leads/record-lead-events.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { freePort } from '../../scripts/local/services.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let a: Awaited<ReturnType<typeof createFirm>>;
let b: Awaited<ReturnType<typeof createFirm>>;
beforeAll(async () => {
  stack = await startStack();
  a = await createFirm(stack);
  b = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const leadsOf = (s: Stack, firm: string) =>
  s.services.mongo.db.collection(COLLECTIONS.leads).countDocuments({ firm });

describe('POST /api/leads with an Idempotency-Key', () => {
  it('a repeat answers the same lead, as it is, and makes none; another key makes another', async () => {
    const headers = { 'Idempotency-Key': `lead-${rand(8)}` };
    const before = await leadsOf(stack, a.slug);
    const first = await a.client.post('/api/leads', { firmSlug: a.slug, first_name: 'Ann' }, headers);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The repeat is answered before its body is looked at again.
    const repeat = await a.client.post('/api/leads', { firmSlug: a.slug, first_name: 'Bea' }, headers);
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(await leadsOf(stack, a.slug)).toBe(before + 1);
    const other = await a.client.post(
      '/api/leads',
      { firmSlug: a.slug, first_name: 'Ann' },
      { 'Idempotency-Key': `lead-${rand(8)}` },
    );
    expect(other.body.id).not.toBe(first.body.id);
    // The same key is another firm's own.
    const theirs = await b.client.post('/api/leads', { firmSlug: b.slug, first_name: 'Ann' }, headers);
    expect(theirs.status).toBe(200);
    expect(theirs.body.id).not.toBe(first.body.id);
    expect(theirs.body.firm).toBe(b.slug);
  });

  it('concurrent requests with one key make one lead', async () => {
    const headers = { 'Idempotency-Key': `lead-conc-${rand(8)}` };
    const before = await leadsOf(stack, a.slug);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        a.client.post('/api/leads', { firmSlug: a.slug, last_name: 'Lee' }, headers),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
    expect(await leadsOf(stack, a.slug)).toBe(before + 1);
  });

  it('a repeat finishes a first request that died after storing its lead: the lead, with its lead.created', async () => {
    const db = stack.services.mongo.db;
    const key = `lead-died-${rand(8)}`;
    const lead = await newApiLead(db, a.slug, { first_name: 'Cy' });
    await db.collection(COLLECTIONS.leads).insertOne(lead as never);
    const stale = new Date(Date.now() - 120_000);
    await db.collection(COLLECTIONS.idempotencyKeys).insertOne({
      _id: `lead|${a.slug}|${key}` as never,
      scope: 'lead',
      firm: a.slug,
      key,
      resource_id: lead._id,
      state: 'pending',
      created_at: stale,
      updated_at: stale,
    });
    const events = db.collection(COLLECTIONS.events);
    expect(await events.countDocuments({ _id: leadCreatedEventId(lead) as never })).toBe(0);
    const repeat = await a.client.post(
      '/api/leads',
      { firmSlug: a.slug, first_name: 'Cy' },
      { 'Idempotency-Key': key },
    );
    expect(repeat.status, JSON.stringify(repeat.body)).toBe(200);
    expect(repeat.body.id).toBe(lead._id);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(await events.countDocuments({ _id: leadCreatedEventId(lead) as never })).toBe(1);
  });

  it('refuses a malformed key before anything is stored', async () => {
    const before = await leadsOf(stack, a.slug);
    const res = await a.client.post(
      '/api/leads',
      { firmSlug: a.slug, first_name: 'Di' },
      { 'Idempotency-Key': 'two words' },
    );
    expectError(res, 400, 'invalid_request');
    expect(await leadsOf(stack, a.slug)).toBe(before);
  });
});

describe('POST /api/leads with Redis unreachable', () => {
  let down: Stack;
  beforeAll(async () => {
    down = await startStack({ env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
  });
  afterAll(async () => down?.stop());

  it('answers 503 and leaves neither the lead, nor its event, nor the key behind', async () => {
    const firm = await createFirm(down);
    const db = down.services.mongo.db;
    for (const headers of [{}, { 'Idempotency-Key': `lead-outage-${rand(8)}` }] as Record<string, string>[]) {
      const res = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Ed' }, headers);
      expectError(res, 503, 'unavailable');
    }
    expect(await leadsOf(down, firm.slug)).toBe(0);
    expect(
      await db.collection(COLLECTIONS.events).countDocuments({ firm: firm.slug, type: 'lead.created' }),
    ).toBe(0);
    expect(await db.collection(COLLECTIONS.idempotencyKeys).countDocuments({ firm: firm.slug })).toBe(0);
  });
});
