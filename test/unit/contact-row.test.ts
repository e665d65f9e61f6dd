// One row of a contacts import, checked and normalised (core/domain/contacts/contact-row.ts).
// How an import counts rows (imported, duplicate, error) against a firm's contacts is tested over
// HTTP in test/contacts/import-rows.test.ts; here, what one row becomes and every reason it fails.
import { describe, expect, it } from 'vitest';
import { parseContactRow } from '../../core/domain/contacts/contact-row.js';

/** The fields of a row that must parse. */
function fields(row: unknown, country: 'US' | 'GB' = 'US') {
  const parsed = parseContactRow(row, country);
  if (!parsed.ok) throw new Error(`refused: ${parsed.reason}`);
  return parsed.fields;
}

/** The reason a row that must fail fails. */
function reason(row: unknown): string {
  const parsed = parseContactRow(row, 'US');
  if (parsed.ok) throw new Error(`accepted ${JSON.stringify(row)}`);
  return parsed.reason;
}

const PHONE = '2125550100';

describe('a row that parses', () => {
  it('trims text, stores the phone in E.164 with its extension apart, and lower-cases the email', () => {
    expect(
      fields({
        first_name: '  Ann ',
        last_name: '',
        notes: null,
        company: undefined,
        phone: '+1 (212) 555-0100 ext 9',
        email: ' Ann@X.com ',
      }),
    ).toEqual({
      first_name: 'Ann',
      phone: '+12125550100',
      phone_extension: '9',
      email: 'ann@x.com',
      tags: [],
      custom: [],
    });
  });

  it('reads national numbers in the country given', () => {
    expect(fields({ phone: '020 7946 0018' }, 'GB').phone).toBe('+442079460018');
    expect(reason({ phone: '020 7946 0018' })).toMatch(/read as US/);
  });

  it('takes tags as an array or as one cell split at commas and semicolons, trimmed, without repeats', () => {
    expect(fields({ phone: PHONE, tags: ['vip', ' vip ', '', 'b'] }).tags).toEqual(['vip', 'b']);
    expect(fields({ phone: PHONE, tags: 'a, b; a' }).tags).toEqual(['a', 'b']);
  });

  it('keeps other string fields, and those under "custom", as custom fields in order; blank ones are dropped', () => {
    expect(
      fields({ phone: PHONE, custom: { x: '1', y: null }, 'Case Type': ' injury ', blank: '  ' }).custom,
    ).toEqual([
      { key: 'x', value: '1' },
      { key: 'Case Type', value: 'injury' },
    ]);
    // "custom" that is not an object is an ordinary custom field.
    expect(fields({ phone: PHONE, custom: 'str' }).custom).toEqual([{ key: 'custom', value: 'str' }]);
  });

  it('drops a blank field whatever its name: a column left without a header, or with a long one', () => {
    // A CSV whose header line ends in a comma gives every row a field named "", its cell empty.
    expect(fields({ phone: PHONE, '': '', ' ': '  ', ['k'.repeat(101)]: '' }).custom).toEqual([]);
    expect(fields({ email: 'ann@x.com', '': '', company: 'Acme' })).toMatchObject({
      email: 'ann@x.com',
      company: 'Acme',
      custom: [],
    });
  });

  it('treats keys named like Object.prototype members as ordinary custom fields', () => {
    const row = JSON.parse(`{"phone":"${PHONE}","__proto__":"p","constructor":"c"}`) as unknown;
    expect(fields(row).custom).toEqual([
      { key: '__proto__', value: 'p' },
      { key: 'constructor', value: 'c' },
    ]);
  });

  it('reads a finite numeric external_id as its text, and no other number', () => {
    expect(fields({ phone: PHONE, external_id: 991 }).external_id).toBe('991');
    expect(reason({ phone: PHONE, external_id: Infinity })).toBe(
      '"external_id" must be a string, not a number',
    );
  });

  it('imports a valid phone beside an invalid email, without the email', () => {
    expect(fields({ phone: PHONE, email: 'nope' })).toEqual({ phone: '+12125550100', tags: [], custom: [] });
  });

  it('accepts text fields at their longest', () => {
    expect(
      fields({ phone: PHONE, first_name: 'x'.repeat(200), notes: 'n'.repeat(10_000) }).first_name,
    ).toHaveLength(200);
  });
});

describe('a row that fails, and why', () => {
  it.each([
    ['a string', 'Jane Doe', 'the row is a string, not an object'],
    ['null', null, 'the row is null, not an object'],
    ['an array', [{ phone: PHONE }], 'the row is an array, not an object'],
    ['a number', 42, 'the row is a number, not an object'],
    ['an empty object', {}, 'the row has neither a phone nor an email'],
    ['blank contact points', { phone: ' ', email: '' }, 'the row has neither a phone nor an email'],
    ['an invalid email alone', { email: 'nope' }, '"email" "nope" is not a valid email address'],
    [
      'a first_name too long',
      { phone: PHONE, first_name: 'x'.repeat(201) },
      '"first_name" is longer than 200 characters',
    ],
    [
      '51 tags',
      { phone: PHONE, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) },
      '"tags" has more than 50 tags',
    ],
    ['a tag too long', { phone: PHONE, tags: ['x'.repeat(101)] }, 'a tag is longer than 100 characters'],
    ['tags of another type', { phone: PHONE, tags: 5 }, '"tags" must be a string or an array of strings'],
    [
      'a field given twice',
      { phone: PHONE, x: 'a', custom: { x: 'b' } },
      'a custom field is given twice (as a field and under "custom")',
    ],
    [
      '51 custom fields',
      { phone: PHONE, ...Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`c${i}`, 'v'])) },
      'the row has more than 50 custom fields',
    ],
    [
      'a custom value too long',
      { phone: PHONE, big: 'v'.repeat(2001) },
      'custom field "big" is longer than 2000 characters',
    ],
    [
      'a custom value not a string',
      { phone: PHONE, matter: { id: 1 } },
      'custom field "matter" must be a string, not an object',
    ],
  ])('%s', (_what, row, expected) => {
    expect(reason(row)).toBe(expected);
  });

  it('reports an invalid phone even beside a valid email, and an invalid email beside it', () => {
    expect(reason({ phone: '12345', email: 'carl@example.com' })).toBe(
      '"phone" "12345" is not a valid phone number (numbers without a country code are read as US)',
    );
    expect(reason({ phone: '12345', email: 'nope' })).toMatch(/"phone" "12345".*; "email" "nope"/);
  });

  it('lists at most three problems and says how many more', () => {
    expect(reason({ phone: 1, email: 2, first_name: 3, last_name: true, tags: 5 })).toBe(
      '"phone" must be a string, not a number; "email" must be a string, not a number; ' +
        '"first_name" must be a string, not a number; and 2 more',
    );
  });

  it('clips the request values it quotes', () => {
    const long = reason({ phone: 'x'.repeat(1000) });
    expect(long.length).toBeLessThan(250);
    expect(long).toContain('…');
    expect(reason({ phone: PHONE, ['k'.repeat(101)]: 'v' })).toMatch(
      /^a custom field name must be 1 to 100 characters/,
    );
  });
});
