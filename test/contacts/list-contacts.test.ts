// GET /api/contacts?firmSlug=&q=&limit=&cursor=: a firm's contacts newest first (ties by id),
// keyset pages that neither repeat nor skip while imports go on, a cursor bound to the firm and
// the query, and ?q= by name, phone and email (case- and accent-insensitive, by prefix).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { importRows, listAll } from './support.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;

const pad = (n: number) => String(n).padStart(4, '0');

beforeAll(async () => {
  stack = await startStack({ workers: true });
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
  await importRows(firmA.client, firmA.slug, [
    {
      first_name: 'José',
      last_name: 'Álvarez',
      phone: '+1 (212) 555-0100',
      email: 'Jose.Alvarez@Example.com',
    },
    { name: 'Mary-Jane Watson', phone: '415 555 0101' },
    { first_name: 'Ann', last_name: 'Lee', email: 'ann@lee-law.com' },
    { first_name: 'Annabel', last_name: 'Smith', phone: '+44 20 7946 0018' },
    { first_name: 'Bob', last_name: 'Annan', email: 'bob@example.org' },
  ]);
  await importRows(firmB.client, firmB.slug, [
    { first_name: 'Ann', last_name: 'Other', phone: '+12125550100' },
  ]);
});
afterAll(async () => stack?.stop());

const search = async (q: string) =>
  (await listAll(firmA.client, firmA.slug, q)).map((c) => c.first_name ?? c.name).sort();

describe('search', () => {
  it('finds names by word prefix, regardless of case and accents', async () => {
    expect(await search('ann')).toEqual(['Ann', 'Annabel', 'Bob']);
    expect(await search('ANN LEE')).toEqual(['Ann']);
    expect(await search('jose')).toEqual(['José']);
    expect(await search('alvarez')).toEqual(['José']);
    expect(await search('jane')).toEqual(['Mary-Jane Watson']);
    expect(await search('mary-jane')).toEqual(['Mary-Jane Watson']);
    expect(await search('zed')).toEqual([]);
  });

  it('finds phones by their digits, written any way, international or national', async () => {
    expect(await search('+1 (212) 555-0100')).toEqual(['José']);
    expect(await search('2125550100')).toEqual(['José']);
    expect(await search('212-555')).toEqual(['José']);
    expect(await search('415')).toEqual(['Mary-Jane Watson']);
    expect(await search('+44 20 7946')).toEqual(['Annabel']);
    expect(await search('020 7946 0018')).toEqual(['Annabel']);
  });

  it('finds emails whole, by local part and by domain', async () => {
    expect(await search('JOSE.ALVAREZ@example.com')).toEqual(['José']);
    expect(await search('ann@')).toEqual(['Ann']);
    expect(await search('lee-law')).toEqual(['Ann']);
    expect(await search('example')).toEqual(['Bob', 'José']);
  });

  it('treats the query as text, never as a pattern, and never finds another firm’s contacts', async () => {
    expect(await search('.*')).toEqual([]);
    expect(await search('a|b')).toEqual([]);
    expect(await search('(')).toEqual([]);
    const b = await listAll(firmB.client, firmB.slug, 'ann');
    expect(b.map((c) => c.last_name)).toEqual(['Other']);
  });

  it('an empty or blank query lists every contact, as no query does (a search box left empty)', async () => {
    const all = await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&limit=1000`);
    expect(all.status).toBe(200);
    for (const q of ['', ' ']) {
      const res = await firmA.client.get(
        `/api/contacts?firmSlug=${firmA.slug}&limit=1000&q=${encodeURIComponent(q)}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual(all.body);
    }
  });

  it('refuses a too long or six-word query with 400', async () => {
    for (const q of ['x'.repeat(101), 'a b c d e f']) {
      const res = await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&q=${encodeURIComponent(q)}`);
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toContain('/q');
    }
  });
});

describe('pages', () => {
  it('returns contacts in the documented shape, newest first', async () => {
    const res = await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&limit=2`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['contacts', 'next_cursor']);
    expect(res.body.contacts).toHaveLength(2);
    expect(Object.keys(res.body.contacts[0]).sort()).toEqual(
      [
        'id',
        'firm',
        'first_name',
        'last_name',
        'name',
        'phone',
        'phone_extension',
        'email',
        'company',
        'notes',
        'tags',
        'source',
        'external_id',
        'custom',
        'created_at',
      ].sort(),
    );
    expect(res.body.next_cursor).not.toBe('');
  });

  it('pages 1,200 contacts with limit 97 while more are imported: no repeat, no gap, "" at the end', async () => {
    const firm = await createFirm(stack);
    await importRows(
      firm.client,
      firm.slug,
      Array.from({ length: 1200 }, (_, i) => ({ first_name: `C${i}`, phone: `+1310555${pad(i)}` })),
    );
    const seen: string[] = [];
    let cursor = '';
    let pages = 0;
    do {
      const res = await firm.client.get(`/api/contacts?limit=97&cursor=${encodeURIComponent(cursor)}`);
      expect(res.status).toBe(200);
      expect(res.body.contacts.length).toBeLessThanOrEqual(97);
      seen.push(...res.body.contacts.map((c: { id: string }) => c.id));
      cursor = res.body.next_cursor;
      pages += 1;
      // Newer contacts arrive meanwhile: they sort before every cursor and are not in this walk.
      if (pages === 3) {
        await importRows(firm.client, firm.slug, [{ first_name: 'Late', phone: '+16175550000' }]);
      }
    } while (cursor !== '');
    expect(pages).toBe(13);
    expect(new Set(seen).size).toBe(1200);
    expect(seen).toEqual([...seen].sort().reverse());
  });

  it('pages search results too, with a cursor bound to the firm and the query', async () => {
    const first = await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&q=ann&limit=2`);
    expect(first.body.contacts).toHaveLength(2);
    const cursor = encodeURIComponent(first.body.next_cursor);
    const second = await firmA.client.get(
      `/api/contacts?firmSlug=${firmA.slug}&q=ann&limit=2&cursor=${cursor}`,
    );
    expect(second.body.contacts).toHaveLength(1);
    expect(second.body.next_cursor).toBe('');
    const ids = [...first.body.contacts, ...second.body.contacts].map((c: { id: string }) => c.id);
    expect(new Set(ids).size).toBe(3);
    // The same cursor for another query, another firm, or tampered with: 400 invalid_cursor.
    expectError(
      await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&q=bob&cursor=${cursor}`),
      400,
      'invalid_cursor',
    );
    expectError(await firmB.client.get(`/api/contacts?q=ann&cursor=${cursor}`), 400, 'invalid_cursor');
    expectError(
      await firmA.client.get(`/api/contacts?firmSlug=${firmA.slug}&q=ann&cursor=${cursor}x`),
      400,
      'invalid_cursor',
    );
  });

  it('refuses a limit outside 1–1000 with 400', async () => {
    for (const limit of ['0', '1001', 'many']) {
      expectError(await firmA.client.get(`/api/contacts?limit=${limit}`), 400, 'invalid_request');
    }
  });
});
