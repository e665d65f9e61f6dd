// Email addresses as every area reads them (core/domain/contact-points/emails.ts): found in free
// text, read from a spoken answer, and given on their own; always trimmed and lower-cased.
import { describe, expect, it } from 'vitest';
import { findEmail, normalizeEmail, readEmailAnswer } from '../../core/domain/contact-points/emails.js';

describe('findEmail and readEmailAnswer (free text)', () => {
  it('reads emails, lower-cased, written or spoken', () => {
    expect(findEmail('write to Jane.Doe+law@Example.COM.')).toBe('jane.doe+law@example.com');
    expect(findEmail('jane@example.com...')).toBe('jane@example.com');
    expect(findEmail('jane at example')).toBeNull();
    expect(findEmail('jane@example')).toBeNull();
    expect(findEmail('')).toBeNull();
    expect(readEmailAnswer("it's jane dot doe at example dot com")).toBe('jane.doe@example.com');
    expect(readEmailAnswer('JANE AT EXAMPLE DOT CO DOT UK')).toBe('jane@example.co.uk');
    expect(readEmailAnswer('jane @ example.com')).toBe('jane@example.com');
  });

  it.each(['no idea', "I'm at home", 'at dot', ''])('reads no email in the answer %j', (text) => {
    expect(readEmailAnswer(text)).toBeNull();
  });
});

describe('normalizeEmail (an address given on its own)', () => {
  it('trims and lower-cases a valid address', () => {
    expect(normalizeEmail(' Jane.Doe@Example.COM ')).toBe('jane.doe@example.com');
    expect(normalizeEmail('a+tag@sub.example.co.uk')).toBe('a+tag@sub.example.co.uk');
  });

  it("takes every character a local part may have unquoted, such as an apostrophe (o'brien@)", () => {
    expect(normalizeEmail(" Sean.O'Brien@Example.com")).toBe("sean.o'brien@example.com");
    expect(normalizeEmail("d'angelo@x.com")).toBe("d'angelo@x.com");
    expect(normalizeEmail('a!#$%&*/=?^_`{|}~-b@x.com')).toBe('a!#$%&*/=?^_`{|}~-b@x.com');
  });

  it.each([
    ['empty', ''],
    ['no domain dot', 'jane@example'],
    ['a doubled dot in the local part', 'a..b@x.com'],
    ['a leading dot', '.a@x.com'],
    ['a trailing dot in the local part', 'a.@x.com'],
    ['a doubled dot in the domain', 'a@x..com'],
    ['two addresses', 'jane@example.com and bob@example.com'],
    ['text around it', 'mail: jane@example.com'],
    ['no local part', '@example.com'],
    ['no @', 'jane.example.com'],
    ['a space in the local part', 'jane doe@example.com'],
    ['a quoted local part', '"jane"@example.com'],
    ['an apostrophe in the domain', "jane@o'brien.com"],
  ])('is null for %s', (_what, text) => {
    expect(normalizeEmail(text)).toBeNull();
  });

  it('keeps to the lengths SMTP carries: 64 in the local part, 254 in all', () => {
    expect(normalizeEmail(`${'a'.repeat(64)}@x.com`)).not.toBeNull();
    expect(normalizeEmail(`${'a'.repeat(65)}@x.com`)).toBeNull();
    // "a@" + domain + ".com": 254 characters, then 255.
    expect(normalizeEmail(`a@${'b'.repeat(248)}.com`)).toHaveLength(254);
    expect(normalizeEmail(`a@${'b'.repeat(249)}.com`)).toBeNull();
  });
});
