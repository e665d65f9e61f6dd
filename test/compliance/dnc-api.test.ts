// The firm's do-not-call list over the API (docs/compliance.md#do-not-call-list): adding numbers
// (one bulk write however many), the CSV import with its per-row errors, keyset pages, a removal
// that is itself recorded and needs the platform key or the firm's request with a reason, firm
// isolation, and a clear 4xx in the error shape for every malformed request.
import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, freshMongoUri, startStack, type Stack } from '../helpers/stack.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let other: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({ env: { MONGODB_URI: uri.toString() } });
  firm = await createFirm(stack);
  other = await createFirm(stack);
});
afterAll(async () => {
  await stack?.stop();
});

const db = () => stack.services.mongo.db;
/** A valid US number per index: +1 212 555 01xx style, distinct per firm test. */
const us = (area: number, n: number) => `+1${area}555${String(n).padStart(4, '0')}`;

/** Every page of the firm's list, following next_cursor. */
async function allEntries(client = firm.client, firmSlug = firm.slug, limit = 10) {
  const entries: any[] = [];
  let cursor = '';
  let pages = 0;
  for (;;) {
    const res = await client.get(
      `/api/compliance/dnc?firmSlug=${firmSlug}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    entries.push(...res.body.entries);
    pages++;
    if (res.body.next_cursor === '') return { entries, pages };
    cursor = res.body.next_cursor;
  }
}

describe('POST /api/compliance/dnc', () => {
  it('adds numbers in E.164, counting added, already listed and invalid (with details)', async () => {
    const res = await firm.client.post('/api/compliance/dnc', {
      firmSlug: firm.slug,
      phones: ['+12125550101', '(212) 555-0102', '212.555.0101', 'not a phone', '', '+1212555'],
      reason: 'asked by letter',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      added: 2,
      already_listed: 1,
      invalid: 3,
      invalid_phones: [
        { index: 3, value: 'not a phone', reason: expect.stringContaining('not a valid phone number') },
        { index: 4, value: '', reason: 'is empty' },
        { index: 5, value: '+1212555', reason: expect.stringContaining('not a valid phone number') },
      ],
    });
    const again = await firm.client.post('/api/compliance/dnc', {
      firmSlug: firm.slug,
      phones: ['+12125550102', '+12125550103'],
    });
    expect(again.body).toMatchObject({ added: 1, already_listed: 1, invalid: 0 });
    const { entries } = await allEntries();
    const first = entries.find((e) => e.phone === '+12125550101');
    expect(first).toEqual({
      phone: '+12125550101',
      firm: firm.slug,
      source: 'api',
      reason: 'asked by letter',
      evidence: null,
      added_at: expect.any(String),
      added_by: expect.stringMatching(/^api_key:/),
    });
  });

  it('adds 1,000 numbers with one bulk write (one insert command, no read of the list)', async () => {
    const phones = Array.from({ length: 1000 }, (_, i) => us(305, i));
    const commands: Array<{ name: string; collection: string; documents?: number }> = [];
    const listener = (e: CommandStartedEvent) => {
      const command = e.command as Record<string, unknown>;
      const collection = String(command[e.commandName] ?? '');
      if (collection !== COLLECTIONS.dncEntries) return;
      const docs = command.documents as unknown[] | undefined;
      commands.push({ name: e.commandName, collection, ...(docs ? { documents: docs.length } : {}) });
    };
    stack.services.mongo.client.on('commandStarted', listener);
    let res;
    const started = performance.now();
    try {
      res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones });
    } finally {
      stack.services.mongo.client.off('commandStarted', listener);
    }
    expect(res.body).toMatchObject({ added: 1000, already_listed: 0, invalid: 0 });
    console.log(
      `1,000 numbers in one POST: ${commands.length} command(s) on dnc_entries (${[...new Set(commands.map((c) => c.name))].join(', ')}), ${commands.reduce((n, c) => n + (c.documents ?? 0), 0)} documents, answered in ${Math.round(performance.now() - started)} ms`,
    );
    expect(commands).toEqual([{ name: 'insert', collection: COLLECTIONS.dncEntries, documents: 1000 }]);

    // Half of them again with 500 new ones: still one write, each listed one reported by its error.
    commands.length = 0;
    stack.services.mongo.client.on('commandStarted', listener);
    try {
      res = await firm.client.post('/api/compliance/dnc', {
        firmSlug: firm.slug,
        phones: [...phones.slice(0, 500), ...Array.from({ length: 500 }, (_, i) => us(786, i))],
      });
    } finally {
      stack.services.mongo.client.off('commandStarted', listener);
    }
    expect(res.body).toMatchObject({ added: 500, already_listed: 500, invalid: 0 });
    expect(commands).toEqual([{ name: 'insert', collection: COLLECTIONS.dncEntries, documents: 1000 }]);
  });

  it('adds 5,000 numbers, the most one request takes, in one request', async () => {
    const phones = Array.from({ length: 5000 }, (_, i) => us(720, i));
    const started = performance.now();
    const res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones });
    console.log(`5,000 numbers in one POST: answered in ${Math.round(performance.now() - started)} ms`);
    expect(res.body).toMatchObject({ added: 5000, already_listed: 0, invalid: 0 });
  });

  it('lists a number once when 10 requests add it at the same moment', async () => {
    const phone = '+17025550190';
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [phone] }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.reduce((n, a) => n + a.body.added, 0)).toBe(1);
    expect(answers.reduce((n, a) => n + a.body.already_listed, 0)).toBe(9);
    expect(await db().collection(COLLECTIONS.dncEntries).countDocuments({ phone })).toBe(1);
  });

  it('refuses more than 5,000 numbers with 413 too_many_rows, adding none', async () => {
    const phones = Array.from({ length: 5001 }, (_, i) => us(415, i));
    expectError(
      await firm.client.post('/api/compliance/dnc', { firmSlug: other.slug, phones }),
      403,
      'forbidden',
    );
    expectError(
      await stack.admin.post('/api/compliance/dnc', { firmSlug: other.slug, phones }),
      413,
      'too_many_rows',
    );
    expect(await db().collection(COLLECTIONS.dncEntries).countDocuments({ firm: other.slug })).toBe(0);
  });

  it.each([
    ['no firmSlug', { phones: ['+12125550101'] }, '/firmSlug'],
    ['no phones', { firmSlug: 'F' }, '/phones'],
    ['an empty phones array', { firmSlug: 'F', phones: [] }, '/phones'],
    ['phones as a string', { firmSlug: 'F', phones: '+12125550101' }, '/phones'],
    ['a number that is not a string', { firmSlug: 'F', phones: [12125550101] }, '/phones/0'],
    ['an object for firmSlug', { firmSlug: { $ne: null }, phones: ['+12125550101'] }, '/firmSlug'],
    ['an unknown field', { firmSlug: 'F', phones: ['+12125550101'], to_number: 'x' }, ''],
    ['an unknown source', { firmSlug: 'F', phones: ['+12125550101'], source: 'call' }, '/source'],
    ['an empty reason', { firmSlug: 'F', phones: ['+12125550101'], reason: '' }, '/reason'],
    ['a reason too long', { firmSlug: 'F', phones: ['+12125550101'], reason: 'x'.repeat(501) }, '/reason'],
    [
      'an unknown defaultCountry',
      { firmSlug: 'F', phones: ['+12125550101'], defaultCountry: 'ZZ' },
      '/defaultCountry',
    ],
  ])('answers 400 invalid_request for %s, adding nothing', async (_, body, path) => {
    const sent = JSON.parse(JSON.stringify(body).replaceAll('"F"', JSON.stringify(other.slug)));
    const details = expectError(await stack.admin.post('/api/compliance/dnc', sent), 400, 'invalid_request');
    if (path !== '') expect(details.map((d) => d.path)).toContain(path);
    expect(await db().collection(COLLECTIONS.dncEntries).countDocuments({ firm: other.slug })).toBe(0);
  });

  it('answers 415 for a body that is not JSON and 404 for an unknown firm', async () => {
    const res = await stack.admin.request('POST', '/api/compliance/dnc', {
      rawBody: 'phone\n+12125550101\n',
      headers: { 'Content-Type': 'text/csv' },
    });
    expectError(res, 415, 'unsupported_media_type');
    expectError(
      await stack.admin.post('/api/compliance/dnc', { firmSlug: 'no-such-firm', phones: ['+12125550101'] }),
      404,
      'firm_not_found',
    );
  });
});

describe('GET /api/compliance/dnc', () => {
  it('pages through the whole list in _id order without repeats, each firm only its own', async () => {
    const phones = Array.from({ length: 25 }, (_, i) => us(617, i));
    expect(
      (await other.client.post('/api/compliance/dnc', { firmSlug: other.slug, phones })).body.added,
    ).toBe(25);
    const { entries, pages } = await allEntries(other.client, other.slug, 10);
    expect(pages).toBe(3);
    const listed = entries.map((e) => e.phone);
    expect(listed).toEqual([...phones].sort());
    expect(entries.every((e) => e.firm === other.slug)).toBe(true);
    // The firm token may leave firmSlug out; the platform key must name the firm.
    const own = await other.client.get('/api/compliance/dnc?limit=1000');
    expect(own.body.entries.map((e: any) => e.phone)).toEqual(listed);
    expectError(await stack.admin.get('/api/compliance/dnc'), 400, 'invalid_request');
    expectError(await firm.client.get(`/api/compliance/dnc?firmSlug=${other.slug}`), 403, 'forbidden');
  });

  it('refuses a tampered cursor and another firm’s cursor with 400 invalid_cursor', async () => {
    const first = await other.client.get(`/api/compliance/dnc?firmSlug=${other.slug}&limit=5`);
    const cursor = first.body.next_cursor as string;
    expect(cursor).not.toBe('');
    expectError(
      await other.client.get(`/api/compliance/dnc?limit=5&cursor=${encodeURIComponent(`${cursor}x`)}`),
      400,
      'invalid_cursor',
    );
    expectError(
      await stack.admin.get(`/api/compliance/dnc?firmSlug=${firm.slug}&cursor=${encodeURIComponent(cursor)}`),
      400,
      'invalid_cursor',
    );
    expectError(await other.client.get('/api/compliance/dnc?limit=0'), 400, 'invalid_request');
    expectError(await other.client.get('/api/compliance/dnc?limit=1001'), 400, 'invalid_request');
  });
});

describe('POST /api/compliance/dnc-import', () => {
  it('reads the phone column of a CSV with a header, reporting each bad row by its line', async () => {
    const csv = [
      'Name,Phone,Note',
      'Ann,+12025550110,letter',
      'Bob,(202) 555-0111,',
      '',
      'Cy,555,wrong',
      'Dee,"+1 202 555 0110",again',
      'Eve,,none',
    ].join('\n');
    const res = await firm.client.post('/api/compliance/dnc-import', {
      firmSlug: firm.slug,
      csv,
      reason: 'mailing',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      rows: 5,
      added: 2,
      already_listed: 1,
      invalid: 2,
      invalid_rows: [
        { line: 5, value: '555', reason: expect.stringContaining('not a valid phone number') },
        { line: 7, value: '', reason: 'is empty' },
      ],
    });
    const { entries } = await allEntries(firm.client, firm.slug, 1000);
    expect(entries.find((e) => e.phone === '+12025550111')).toMatchObject({
      source: 'csv',
      reason: 'mailing',
    });
  });

  it('reads the first column of a CSV without a header', async () => {
    const res = await firm.client.post('/api/compliance/dnc-import', {
      firmSlug: firm.slug,
      csv: '+14045550120\r\n4045550121\r\n',
    });
    expect(res.body).toMatchObject({ rows: 2, added: 2, invalid: 0 });
  });

  it('answers 400 for a CSV that cannot be parsed and 413 for more than 5,000 rows, adding nothing', async () => {
    const before = await db().collection(COLLECTIONS.dncEntries).countDocuments({ firm: firm.slug });
    const details = expectError(
      await firm.client.post('/api/compliance/dnc-import', {
        firmSlug: firm.slug,
        csv: 'phone\n"+14045550130\n',
      }),
      400,
      'invalid_request',
    );
    expect(details.map((d) => d.path)).toEqual(['/csv']);
    const big = ['phone', ...Array.from({ length: 5001 }, (_, i) => us(512, i))].join('\n');
    expectError(
      await firm.client.post('/api/compliance/dnc-import', { firmSlug: firm.slug, csv: big }),
      413,
      'too_many_rows',
    );
    expectError(
      await firm.client.post('/api/compliance/dnc-import', { firmSlug: firm.slug, csv: '' }),
      400,
      'invalid_request',
    );
    expectError(
      await firm.client.post('/api/compliance/dnc-import', {
        firmSlug: firm.slug,
        csv: 'x'.repeat(1_000_001),
      }),
      400,
      'invalid_request',
    );
    expect(await db().collection(COLLECTIONS.dncEntries).countDocuments({ firm: firm.slug })).toBe(before);
  });
});

describe('DELETE /api/compliance/dnc/{phone}', () => {
  it("takes a number off at the firm's request, and records the removal with its reason", async () => {
    // A firm of its own, so that its whole list is read in one page.
    const firm = await createFirm(stack);
    await firm.client.post('/api/compliance/dnc', {
      firmSlug: firm.slug,
      phones: ['+13125550140'],
      reason: 'call log',
    });
    const path = `/api/compliance/dnc/${encodeURIComponent('+13125550140')}?firmSlug=${firm.slug}`;
    const res = await firm.client.delete(`${path}&reason=${encodeURIComponent('listed by mistake')}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      phone: '+13125550140',
      firm: firm.slug,
      removed: true,
      removal_id: expect.any(String),
      removed_at: expect.any(String),
      removed_by: expect.stringMatching(/^api_key:/),
      authority: 'firm_request',
      reason: 'listed by mistake',
    });
    expect((await allEntries(firm.client, firm.slug, 1000)).entries.map((e) => e.phone)).not.toContain(
      '+13125550140',
    );
    const record = await db().collection(COLLECTIONS.dncRemovals).findOne({ _id: res.body.removal_id });
    expect(record).toMatchObject({
      firm: firm.slug,
      phone: '+13125550140',
      authority: 'firm_request',
      reason: 'listed by mistake',
      entry: { source: 'api', reason: 'call log', added_by: expect.stringMatching(/^api_key:/) },
    });
    expectError(await firm.client.delete(`${path}&reason=again`), 404, 'dnc_entry_not_found');
  });

  it("the firm's own token needs no reason either (the contract's DELETE has none): recorded with reason null", async () => {
    await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: ['+13125550143'] });
    const res = await firm.client.delete(`/api/compliance/dnc/%2B13125550143?firmSlug=${firm.slug}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ removed: true, authority: 'firm_request', reason: null });
    const record = await db().collection(COLLECTIONS.dncRemovals).findOne({ _id: res.body.removal_id });
    expect(record).toMatchObject({ phone: '+13125550143', authority: 'firm_request', reason: null });
    expect((await allEntries(firm.client, firm.slug, 1000)).entries.map((e) => e.phone)).not.toContain(
      '+13125550143',
    );
  });

  it('takes a number off with the platform key, no reason needed; a raw + in the path works too', async () => {
    await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: ['+13125550141'] });
    const res = await stack.admin.delete(`/api/compliance/dnc/+13125550141?firmSlug=${firm.slug}`);
    expect(res.body).toMatchObject({
      removed: true,
      authority: 'platform',
      removed_by: 'platform',
      reason: null,
    });
    expect(await db().collection(COLLECTIONS.dncRemovals).countDocuments({ phone: '+13125550141' })).toBe(1);
  });

  it('keeps firms apart and refuses a malformed number', async () => {
    await other.client.post('/api/compliance/dnc', { firmSlug: other.slug, phones: ['+13125550142'] });
    expectError(
      await firm.client.delete(`/api/compliance/dnc/%2B13125550142?firmSlug=${other.slug}&reason=x`),
      403,
      'forbidden',
    );
    // The firm's own list does not have it: 404, and the other firm's entry stays.
    expectError(
      await firm.client.delete('/api/compliance/dnc/%2B13125550142?reason=x'),
      404,
      'dnc_entry_not_found',
    );
    expect((await allEntries(other.client, other.slug, 1000)).entries.map((e) => e.phone)).toContain(
      '+13125550142',
    );
    expectError(
      await firm.client.delete('/api/compliance/dnc/not-a-number?reason=x'),
      400,
      'invalid_request',
    );
    expectError(await stack.admin.delete('/api/compliance/dnc/%2B13125550142'), 400, 'invalid_request');
  });
});
