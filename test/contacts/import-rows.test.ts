// POST /api/contacts/import (docs/contacts.md#rows): how rows are counted. Every row is imported, a
// duplicate or an error (i + d + e = rows); phones are stored in E.164 read with defaultCountry,
// emails trimmed and lower-cased; a duplicate shares a phone or email with a contact of the
// firm or an earlier imported row of the request; other firms' contacts never count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { contactKeysOf, contactsOf, expectNoTwins, importRows, listAll } from './support.js';

let stack: Stack;
let firmA: Awaited<ReturnType<typeof createFirm>>;
let firmB: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  firmA = await createFirm(stack);
  firmB = await createFirm(stack);
});
afterAll(async () => stack?.stop());

type Outcome = 'imported' | 'duplicate' | RegExp;

/** The tricky rows, each with what it must count as (a RegExp: an error row with that reason). */
const TABLE: Array<[string, unknown, Outcome]> = [
  ['formatted US phone', { first_name: 'Ann', last_name: 'Lee', phone: '+1 (212) 555-0100' }, 'imported'],
  ['the same phone, national digits', { first_name: 'Annie', phone: '2125550100' }, 'duplicate'],
  ['email with capitals and a trailing space', { name: 'Ann at X', email: 'Ann@X.com ' }, 'imported'],
  ['the same email, lower-case', { email: 'ann@x.com' }, 'duplicate'],
  ['phone only', { phone: '(415) 555-0101' }, 'imported'],
  ['email only', { email: 'bob@example.com' }, 'imported'],
  ['an email with an apostrophe', { email: "Sean.O'Brien@example.com" }, 'imported'],
  [
    'invalid phone with a valid email',
    { phone: '12345', email: 'carl@example.com' },
    /"phone" "12345" is not a valid/,
  ],
  ['a string row', 'Jane Doe, +12125550123', /not an object/],
  ['a null row', null, /not an object/],
  ['an array row', [{ phone: '+12125550124' }], /not an object/],
  ['a number row', 42, /not an object/],
  ['a number phone', { phone: 2125550125 }, /"phone" must be a string, not a number/],
  ['a number first_name', { first_name: 7, phone: '+12125550126' }, /"first_name" must be a string/],
  ['an email array', { email: ['dee@example.com'] }, /"email" must be a string, not an array/],
  ['tags with a number', { phone: '+12125550127', tags: ['vip', 3] }, /"tags" must be/],
  [
    'an object custom field',
    { phone: '+12125550128', matter: { id: 1 } },
    /custom field "matter" must be a string/,
  ],
  ['neither phone nor email', { first_name: 'Nobody', company: 'Acme' }, /neither a phone nor an email/],
  ['blank phone and email', { phone: '  ', email: '' }, /neither a phone nor an email/],
  ['an invalid email alone', { email: 'not-an-email' }, /"email" "not-an-email" is not a valid email/],
  ['a valid phone with an invalid email', { phone: '+1 617 555 0123', email: 'nope@' }, 'imported'],
  [
    'a phone the firm has, with a new email',
    { phone: '212.555.0100', email: 'fresh@example.com' },
    'duplicate',
  ],
  // fresh@example.com was claimed for the row above, which is a duplicate: it is free again.
  ['that new email on a new phone', { phone: '+1 202 555 0143', email: 'FRESH@example.com' }, 'imported'],
  ['a UK number without a country code (default US)', { phone: '020 7946 0018' }, /not a valid phone number/],
  [
    'custom string fields, tags as one string, a numeric external id',
    {
      phone: '+13105550100',
      'Case Type': 'injury',
      tags: 'vip; spanish',
      external_id: 991,
      __proto__x: 'ok',
    },
    'imported',
  ],
];

describe('the counting rules', () => {
  let summary: Awaited<ReturnType<typeof importRows>>;
  beforeAll(async () => {
    summary = await importRows(
      firmA.client,
      firmA.slug,
      TABLE.map(([, row]) => row),
    );
  });

  it('counts each tricky row as the table says, i + d + e = rows', () => {
    const expected = {
      imported: TABLE.filter(([, , o]) => o === 'imported').length,
      duplicates: TABLE.filter(([, , o]) => o === 'duplicate').length,
      errors: TABLE.filter(([, , o]) => o instanceof RegExp).length,
    };
    expect({ imported: summary.imported, duplicates: summary.duplicates, errors: summary.errors }).toEqual(
      expected,
    );
    expect(summary.imported + summary.duplicates + summary.errors).toBe(TABLE.length);
    const errorIndexes = TABLE.flatMap(([, , o], i) => (o instanceof RegExp ? [i] : []));
    expect(summary.error_rows.map((r) => r.index)).toEqual(errorIndexes);
    for (const { index, reason } of summary.error_rows) {
      expect(reason, TABLE[index]![0]).toMatch(TABLE[index]![2] as RegExp);
    }
  });

  it('stores phones in E.164 and emails trimmed and lower-cased, with custom fields and tags', async () => {
    const contacts = await listAll(firmA.client, firmA.slug);
    expect(contacts).toHaveLength(summary.imported);
    const byPhone = new Map(contacts.map((c) => [c.phone, c]));
    expect(byPhone.get('+12125550100')).toMatchObject({ first_name: 'Ann', last_name: 'Lee', email: null });
    expect(byPhone.get('+14155550101')).toMatchObject({ email: null, first_name: null });
    expect(contacts.find((c) => c.email === 'ann@x.com')).toMatchObject({ name: 'Ann at X', phone: null });
    expect(byPhone.get('+16175550123')).toMatchObject({ email: null });
    expect(byPhone.get('+12025550143')).toMatchObject({ email: 'fresh@example.com' });
    expect(byPhone.get('+13105550100')).toMatchObject({
      tags: ['vip', 'spanish'],
      external_id: '991',
      custom: { 'Case Type': 'injury', __proto__x: 'ok' },
    });
    // The key documents agree: one per phone and email of the firm's contacts, none left over.
    const keys = await contactKeysOf(stack).find({ firm: firmA.slug }).toArray();
    const expectedKeys = contacts.flatMap((c) => [
      ...(c.phone === null ? [] : [`${firmA.slug}|phone|${c.phone}`]),
      ...(c.email === null ? [] : [`${firmA.slug}|email|${c.email}`]),
    ]);
    expect(keys.map((k) => k._id).sort()).toEqual(expectedKeys.sort());
    for (const key of keys) {
      expect(contacts.find((c) => c.id === key.contact_id)?.[key.kind]).toBe(key.value);
    }
  });

  it('counts rows matching the firm’s existing contacts as duplicates, and other firms’ never', async () => {
    const rows = [
      { phone: '+12125550100' },
      { email: '  ANN@x.com' },
      { phone: '+1 310 555 0100', email: 'new@example.com' },
      { phone: '+1 646 555 0199' },
    ];
    expect(await importRows(firmA.client, firmA.slug, rows)).toMatchObject({
      imported: 1,
      duplicates: 3,
      errors: 0,
      error_rows: [],
    });
    expect(await importRows(firmB.client, firmB.slug, rows)).toMatchObject({
      imported: 4,
      duplicates: 0,
      errors: 0,
    });
    await expectNoTwins(stack, firmA.slug);
    await expectNoTwins(stack, firmB.slug);
  });

  it('reads national numbers with defaultCountry: a GB number with "GB"', async () => {
    const result = await importRows(
      firmB.client,
      firmB.slug,
      [
        { phone: '020 7946 0018', first_name: 'Olivia' },
        { phone: '+44 20 7946 0018' },
        { phone: '2125550100' },
      ],
      { defaultCountry: 'GB' },
    );
    // The last one is not a valid GB number: read as GB, it is an error, not the US number.
    expect(result).toMatchObject({ imported: 1, duplicates: 1, errors: 1 });
    expect(result.error_rows[0]).toMatchObject({ index: 2 });
    expect(result.error_rows[0]!.reason).toMatch(/read as GB/);
    const stored = await contactsOf(stack).findOne({ firm: firmB.slug, phone: '+442079460018' });
    expect(stored?.first_name).toBe('Olivia');
  });

  it('answers an empty batch with zeros', async () => {
    expect(await importRows(firmA.client, firmA.slug, [])).toEqual({
      imported: 0,
      duplicates: 0,
      errors: 0,
      error_rows: [],
    });
  });

  it('lists at most 100 error rows, the first ones, while counting all', async () => {
    const rows = Array.from({ length: 250 }, (_, i) => (i % 2 === 0 ? { first_name: `x${i}` } : 'nope'));
    const result = await importRows(firmA.client, firmA.slug, rows);
    expect(result).toMatchObject({ imported: 0, duplicates: 0, errors: 250 });
    expect(result.error_rows).toHaveLength(100);
    expect(result.error_rows.map((r) => r.index)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });
});
