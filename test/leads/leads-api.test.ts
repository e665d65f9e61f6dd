import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailPaths, expectError } from '../helpers/expect-error.js';
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

describe('leads API', () => {
  it('creates a lead with the phone in E.164, the email lower-cased, and reads it back', async () => {
    const res = await a.client.post('/api/leads', {
      firmSlug: a.slug,
      first_name: ' Ann ',
      last_name: 'Lee',
      phone: '+1 (212) 555-0100',
      email: ' Ann@X.com ',
      case_type: 'Personal Injury',
      notes: 'Rear-ended on I-95',
      timezone: 'America/Chicago',
      do_not_call: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^lead_/),
      firm: a.slug,
      source: 'api',
      call_id: null,
      chat_id: null,
      campaign_id: null,
      first_name: 'Ann',
      last_name: 'Lee',
      phone: '+12125550100',
      email: 'ann@x.com',
      case_type: 'Personal Injury',
      summary: null,
      urgency: null,
      notes: 'Rear-ended on I-95',
      timezone: 'America/Chicago',
      do_not_call: true,
      consent: null,
      appointment: null,
      known_client: null,
      workflow_status: null,
      tags: [],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const read = await a.client.get(`/api/leads/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    expect((await stack.admin.get(`/api/leads/${res.body.id}`)).body).toEqual(res.body);
  });

  it('a national number is read as US; do_not_call defaults to false', async () => {
    const res = await a.client.post('/api/leads', { firmSlug: a.slug, phone: '212-555-0101' });
    expect(res.status).toBe(200);
    expect(res.body.phone).toBe('+12125550101');
    expect(res.body.do_not_call).toBe(false);
  });

  it('takes any number create-outbound-call may dial: a possible one libphonenumber does not call valid', async () => {
    for (const [phone, e164] of [
      ['+15555550000', '+15555550000'],
      ['(555) 555-0123', '+15555550123'],
      ['+44 7700 900123', '+447700900123'],
    ]) {
      const res = await a.client.post('/api/leads', { firmSlug: a.slug, phone });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.phone).toBe(e164);
    }
  });

  it('refuses bad fields with details, and stores nothing', async () => {
    const before = await stack.services.mongo.db.collection('leads').countDocuments({ firm: a.slug });
    const bad = await a.client.post('/api/leads', {
      firmSlug: a.slug,
      phone: '12',
      email: 'not-an-email',
      timezone: 'Mars/Olympus',
    });
    expectError(bad, 400, 'invalid_request');
    expect(detailPaths(bad).sort()).toEqual(['/email', '/phone', '/timezone']);
    expectError(
      await a.client.post('/api/leads', { firmSlug: a.slug, phone_number: '+12125550100' }),
      400,
      'invalid_request',
    );
    expectError(
      await a.client.post('/api/leads', { firmSlug: a.slug, do_not_call: 'yes' }),
      400,
      'invalid_request',
    );
    expectError(await a.client.post('/api/leads', { firmSlug: { $ne: null } }), 400, 'invalid_request');
    expectError(
      await a.client.post('/api/leads', { firmSlug: a.slug, phone: { $gt: '' } }),
      400,
      'invalid_request',
    );
    expect(await stack.services.mongo.db.collection('leads').countDocuments({ firm: a.slug })).toBe(before);
  });

  it('keeps firms apart: 403 by slug, 404 by id, unknown firm 404', async () => {
    const lead = await a.client.post('/api/leads', { firmSlug: a.slug, email: 'iso@example.com' });
    expectError(
      await b.client.post('/api/leads', { firmSlug: a.slug, email: 'x@example.com' }),
      403,
      'forbidden',
    );
    expectError(await b.client.get(`/api/leads?firmSlug=${a.slug}`), 403, 'forbidden');
    expectError(await b.client.get(`/api/leads/${lead.body.id}`), 404, 'lead_not_found');
    expectError(await stack.admin.get('/api/leads?firmSlug=no-such-firm'), 404, 'firm_not_found');
    expectError(await a.client.get('/api/leads/lead_nope'), 404, 'lead_not_found');
  });

  it('lists: a firm token may leave firmSlug out (its own firm), the platform key must give it (400)', async () => {
    const firm = await createFirm(stack);
    const made = await firm.client.post('/api/leads', { firmSlug: firm.slug, email: 'own@example.com' });
    const own = await firm.client.get('/api/leads');
    expect(own.status).toBe(200);
    expect(own.body.leads.map((l: any) => l.id)).toEqual([made.body.id]);
    const platform = await stack.admin.get('/api/leads');
    expectError(platform, 400, 'invalid_request');
    expect(detailPaths(platform)).toEqual(['/firmSlug']);
  });

  it('pages 50 leads when limit is left out (the default the schema declares)', async () => {
    const firm = await createFirm(stack);
    for (let i = 0; i < 51; i++)
      await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: `n${i}` });
    const page = await firm.client.get(`/api/leads?firmSlug=${firm.slug}`);
    expect(page.body.leads).toHaveLength(50);
    expect(page.body.next_cursor).not.toBe('');
  });

  it('lists newest first by keyset pages with no repeat or gap while leads are added', async () => {
    const firm = await createFirm(stack);
    for (let i = 0; i < 12; i++) {
      const res = await firm.client.post('/api/leads', {
        firmSlug: firm.slug,
        first_name: `P${i}`,
        email: `p${i}@example.com`,
      });
      expect(res.status).toBe(200);
    }
    const seen: string[] = [];
    let cursor = '';
    let pages = 0;
    do {
      const page = await firm.client.get(
        `/api/leads?firmSlug=${firm.slug}&limit=5&cursor=${encodeURIComponent(cursor)}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.leads.map((l: { first_name: string }) => l.first_name));
      cursor = page.body.next_cursor;
      // A lead added meanwhile sorts before the cursor: never seen on later pages, never a gap.
      if (pages === 0) await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'late' });
      pages++;
    } while (cursor !== '');
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => `P${11 - i}`));
    expect(pages).toBe(3);
    const first = await firm.client.get(`/api/leads?firmSlug=${firm.slug}&limit=1`);
    expect(first.body.leads[0].first_name).toBe('late');
  });

  it('refuses a tampered cursor or one from another firm', async () => {
    const page = await a.client.get(`/api/leads?firmSlug=${a.slug}&limit=1`);
    expect(page.body.next_cursor).not.toBe('');
    expectError(
      await a.client.get(`/api/leads?firmSlug=${a.slug}&cursor=${page.body.next_cursor}x`),
      400,
      'invalid_cursor',
    );
    expectError(
      await stack.admin.get(`/api/leads?firmSlug=${b.slug}&cursor=${page.body.next_cursor}`),
      400,
      'invalid_cursor',
    );
    expectError(await a.client.get(`/api/leads?firmSlug=${a.slug}&limit=0`), 400, 'invalid_request');
  });
});
