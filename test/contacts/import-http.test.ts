// POST /api/contacts/import at the HTTP edge: at most 5,000 rows (413 too_many_rows, nothing
// stored), a 16 MiB body limit on this route only, 400 with the error shape for bad bodies,
// many small imports of one firm at once all let in (the limit on pending imports is on the
// bytes they hold), firm isolation on the import, its job and the list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE } from '../../jobs/queues.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import {
  contactKeysOf,
  contactsOf,
  expectNoTwins,
  importRows,
  importsOf,
  pollJob,
  type ImportSummary,
} from './support.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const pad = (n: number, width: number) => String(n).padStart(width, '0');
/** Row i: a distinct valid US phone and email. */
const row = (i: number, extra: Record<string, unknown> = {}) => ({
  first_name: `First${i}`,
  last_name: `Last${i}`,
  phone: `+1 ${['212', '310', '415', '617'][Math.floor(i / 10_000)]} 555 ${pad(i % 10_000, 4)}`,
  email: `person${i}@example.com`,
  ...extra,
});

async function storedNothing(firm: string): Promise<void> {
  expect(await contactsOf(stack).countDocuments({ firm })).toBe(0);
  expect(await contactKeysOf(stack).countDocuments({ firm })).toBe(0);
  expect(await importsOf(stack).countDocuments({ firm })).toBe(0);
}

describe('row and size limits', () => {
  it('refuses 5,001 rows with 413 too_many_rows and stores nothing', async () => {
    const firm = await createFirm(stack);
    const queued = await stack.services.queues[QUEUE.contacts].count();
    const res = await firm.client.post('/api/contacts/import', {
      firmSlug: firm.slug,
      contacts: Array.from({ length: 5001 }, (_, i) => row(i)),
    });
    expectError(res, 413, 'too_many_rows');
    expect(res.body.error.message).toMatch(/5,000/);
    await storedNothing(firm.slug);
    expect(await stack.services.queues[QUEUE.contacts].count()).toBe(queued);
  });

  it('accepts 5,000 rows in a body over 2 MiB', async () => {
    const firm = await createFirm(stack);
    const notes = 'n'.repeat(400);
    const body = JSON.stringify({
      firmSlug: firm.slug,
      contacts: Array.from({ length: 5000 }, (_, i) => row(i, { notes })),
    });
    expect(body.length).toBeGreaterThan(2 * 1024 * 1024);
    const res = await firm.client.request('POST', '/api/contacts/import', {
      rawBody: body,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    expect(res.body).toEqual({ imported: 5000, duplicates: 0, errors: 0, error_rows: [] });
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBe(5000);
  }, 120_000);

  it('refuses a body over 16 MiB with 413 payload_too_large, and keeps 2 MiB on other routes', async () => {
    const big = JSON.stringify({ firmSlug: firmA.slug, contacts: [{ notes: 'x'.repeat(17 * 1024 * 1024) }] });
    const res = await firmA.client.request('POST', '/api/contacts/import', {
      rawBody: big,
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(res, 413, 'payload_too_large');
    const elsewhere = await firmA.client.request('POST', '/api/v2/list-calls', {
      rawBody: JSON.stringify({ firmSlug: firmA.slug, cursor: 'x'.repeat(3 * 1024 * 1024) }),
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(elsewhere, 413, 'payload_too_large');
  });
});

describe('many small imports of one firm at once', () => {
  it('are all let in with the default settings (200 or 202, none 429) and create no two contacts with one phone or email', async () => {
    const firm = await createFirm(stack);
    // Eight imports of three rows over people 0..11, each overlapping the next, the third row
    // one person's phone with another's email: together far below the bytes a firm's pending
    // imports may hold, and more imports than the old cap of 4 let wait at once.
    const batches = Array.from({ length: 8 }, (_, b) => [
      row(b),
      row(b + 1),
      { phone: row(b + 2).phone, email: row(11 - b).email },
    ]);
    const responses = await Promise.all(
      batches.map((contacts) => firm.client.post('/api/contacts/import', { firmSlug: firm.slug, contacts })),
    );
    for (const res of responses) {
      expect([200, 202], JSON.stringify(res.body).slice(0, 300)).toContain(res.status);
    }
    const results = await Promise.all(
      responses.map(async (res) =>
        res.status === 202 ? (await pollJob(firm.client, res.body.job_id as string)).body : res.body,
      ),
    );
    for (const result of results as ImportSummary[]) {
      expect(result).toMatchObject({ errors: 0 });
      expect(result.imported + result.duplicates).toBe(3);
    }
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.length).toBe(results.reduce((n, r) => n + (r as ImportSummary).imported, 0));
  }, 120_000);
});

describe('bad bodies', () => {
  const cases: Array<[string, unknown, string]> = [
    ['an unknown top-level field', { firmSlug: 'FIRM', contacts: [], contact: [] }, '/contact'],
    ['contacts not an array', { firmSlug: 'FIRM', contacts: { phone: '+12125550100' } }, '/contacts'],
    ['contacts missing', { firmSlug: 'FIRM' }, '/contacts'],
    ['firmSlug an operator object', { firmSlug: { $ne: null }, contacts: [] }, '/firmSlug'],
    [
      'defaultCountry not two letters',
      { firmSlug: 'FIRM', contacts: [], defaultCountry: 'USA' },
      '/defaultCountry',
    ],
    [
      'defaultCountry no country',
      { firmSlug: 'FIRM', contacts: [], defaultCountry: 'XX' },
      '/defaultCountry',
    ],
    ['defaultCountry a number', { firmSlug: 'FIRM', contacts: [], defaultCountry: 44 }, '/defaultCountry'],
  ];
  for (const [what, body, path] of cases) {
    it(`answers ${what} with 400 naming ${path}, storing nothing`, async () => {
      const firm = await createFirm(stack);
      const sent = JSON.parse(JSON.stringify(body).replace('"FIRM"', JSON.stringify(firm.slug)));
      const res = await firm.client.post('/api/contacts/import', sent);
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toContain(path);
      await storedNothing(firm.slug);
    });
  }

  it('answers a JSON array body with 400 and a body that is not JSON with 415', async () => {
    expectError(
      await firmA.client.post('/api/contacts/import', [{ phone: '+12125550100' }]),
      400,
      'invalid_request',
    );
    const text = await firmA.client.request('POST', '/api/contacts/import', {
      rawBody: 'phone\n+12125550100\n',
      headers: { 'Content-Type': 'text/csv' },
    });
    expectError(text, 415, 'unsupported_media_type');
  });

  it('accepts a lower-case defaultCountry', async () => {
    const result = await importRows(firmA.client, firmA.slug, [{ phone: '020 7946 0019' }], {
      defaultCountry: 'gb',
    });
    expect(result).toMatchObject({ imported: 1, errors: 0 });
  });
});

describe('rows with keys named like Object.prototype members', () => {
  it('"__proto__", "constructor" and "prototype" columns are kept under custom; the rows import, nothing is polluted', async () => {
    const firm = await createFirm(stack);
    // As the CSV tool and JSON.parse build rows: "__proto__" an own key, never the prototype.
    const rows = JSON.parse(
      JSON.stringify([
        { phone: '+12125550160', first_name: 'Proto', PROTO: 'x', constructor: 'c', prototype: 'p' },
        { phone: '+12125550161', PROTO: { polluted: 'yes' } },
        { email: 'nul@example.com', notes: 'a\u0000b' },
        { email: 'ctor@example.com', constructor: { prototype: { polluted: 'yes' } } },
      ]).replaceAll('"PROTO"', '"__proto__"'),
    ) as unknown[];
    const res = await firm.client.post('/api/contacts/import', { firmSlug: firm.slug, contacts: rows });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      imported: 1,
      duplicates: 0,
      errors: 3,
      error_rows: [
        { index: 1, reason: expect.stringMatching(/custom field "__proto__" must be a string/) },
        { index: 2, reason: expect.stringMatching(/NUL character/) },
        { index: 3, reason: expect.stringMatching(/custom field "constructor" must be a string/) },
      ],
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const [contact] = (await firm.client.get(`/api/contacts?firmSlug=${firm.slug}`)).body.contacts;
    expect(Object.getPrototypeOf(contact.custom)).toBe(Object.prototype);
    expect(Object.entries(contact.custom)).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'c'],
      ['prototype', 'p'],
    ]);
  });
});

describe('firm isolation', () => {
  it('needs a token (401), refuses another firm’s slug (403) and an unknown firm (404)', async () => {
    const body = { firmSlug: firmB.slug, contacts: [row(1)] };
    expectError(await stack.api.post('/api/contacts/import', body), 401, 'unauthorized');
    expectError(await firmA.client.post('/api/contacts/import', body), 403, 'forbidden');
    expectError(
      await stack.admin.post('/api/contacts/import', { firmSlug: 'no-such-firm', contacts: [row(1)] }),
      404,
      'firm_not_found',
    );
    expect(await contactsOf(stack).countDocuments({ firm: firmB.slug, phone: '+12125550001' })).toBe(0);
  });

  it('lets the platform key import for any firm', async () => {
    expect(await importRows(stack.admin, firmB.slug, [row(2)])).toMatchObject({ imported: 1 });
  });

  it('hides a job of another firm (404), shows it to its firm and the platform', async () => {
    await importRows(firmA.client, firmA.slug, [row(3)]);
    const record = await importsOf(stack).findOne({ firm: firmA.slug });
    const path = `/api/contacts/import/${record!._id}`;
    const own = await firmA.client.get(path);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ job_id: record!._id, status: 'completed' });
    expect((await stack.admin.get(path)).status).toBe(200);
    expectError(await firmB.client.get(path), 404, 'import_job_not_found');
    expectError(await firmB.client.get('/api/contacts/import/imp_nope'), 404, 'import_job_not_found');
  });

  it("a job's answer shows the documented counts only, not whatever else its record holds", async () => {
    const firm = await createFirm(stack);
    await importRows(firm.client, firm.slug, [row(4), { first_name: 'No contact point' }]);
    const record = await importsOf(stack).findOne({ firm: firm.slug });
    // What a record's stored result may come to hold (a later version's field, a row's raw data).
    await importsOf(stack).updateOne(
      { _id: record!._id },
      { $set: { 'result.worker_id': 'internal-worker-id', 'result.error_rows.0.raw': 'internal-raw-row' } },
    );
    const res = await firm.client.get(`/api/contacts/import/${record!._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      job_id: record!._id,
      status: 'completed',
      imported: 1,
      duplicates: 0,
      errors: 1,
      error_rows: [{ index: 1, reason: expect.any(String) }],
    });
    expect(res.text).not.toMatch(/internal-/);
  });

  it('lists only a firm’s own contacts: another firm’s slug is 403, the platform must name one (400)', async () => {
    expectError(await firmA.client.get(`/api/contacts?firmSlug=${firmB.slug}`), 403, 'forbidden');
    expectError(await stack.admin.get('/api/contacts'), 400, 'invalid_request');
    expectError(await stack.admin.get('/api/contacts?firmSlug=no-such-firm'), 404, 'firm_not_found');
    const own = await firmA.client.get('/api/contacts');
    expect(own.status).toBe(200);
    expect(own.body.contacts.every((c: { firm: string }) => c.firm === firmA.slug)).toBe(true);
  });
});

describe('the OpenAPI document', () => {
  it('describes the import (200, 202, 413), its job (200, 202, 404) and the list with its query', async () => {
    const doc = (await stack.api.get('/openapi.json')).body;
    const post = doc.paths['/api/contacts/import'].post;
    expect(post.tags).toEqual(['Contacts']);
    expect(Object.keys(post.requestBody.content['application/json'].schema.properties).sort()).toEqual([
      'contacts',
      'defaultCountry',
      'firmSlug',
    ]);
    expect(post.responses['200'].content['application/json'].schema.required.sort()).toEqual([
      'duplicates',
      'error_rows',
      'errors',
      'imported',
    ]);
    expect(post.responses['202'].content['application/json'].schema.properties.status.const).toBe(
      'processing',
    );
    expect(post.responses['413']).toBeDefined();
    const job = doc.paths['/api/contacts/import/{job_id}'].get;
    expect(job.parameters.map((p: { name: string }) => p.name)).toEqual(['job_id']);
    expect(Object.keys(job.responses)).toEqual(expect.arrayContaining(['200', '202', '404']));
    const list = doc.paths['/api/contacts'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'cursor',
      'firmSlug',
      'limit',
      'q',
    ]);
  });
});
