// Phone numbers as every area reads them (core/domain/contact-points/phones.ts): found in free
// text (intake answers), given on their own (a form field, a CSV cell), and checked before a dial.
import { describe, expect, it } from 'vitest';
import {
  findPhone,
  isKnownCountry,
  nationalForms,
  normalizeDialablePhone,
  normalizePhone,
  parseDialable,
  toDialableE164,
  toE164,
} from '../../core/domain/contact-points/phones.js';

const UK = '+442071234567';
const CANADA = '+14165550123';

describe('findPhone (free text)', () => {
  it.each([
    ['(415) 555-0123', '+14155550123'],
    ['415.555.0123', '+14155550123'],
    ['4155550123', '+14155550123'],
    ['call me at 415 555 0123 after 5', '+14155550123'],
    ['+1 212-555-1234', '+12125551234'],
    ['1-800-555-0199', '+18005550199'],
    ['+44 20 7946 0958', '+442079460958'],
  ])('reads %j as %s', (text, e164) => {
    expect(findPhone(text)).toBe(e164);
  });

  it.each(['555-12', '(555) 123-4567', 'no phone', '123', ''])('finds no valid phone in %j', (text) => {
    expect(findPhone(text)).toBeNull();
  });

  it('reads national numbers in the country given', () => {
    expect(findPhone('my number is 020 7946 0018 thanks', 'GB')).toBe('+442079460018');
    expect(findPhone('my number is 020 7946 0018 thanks')).toBeNull();
  });
});

describe('normalizePhone (a number given on its own)', () => {
  it('gives E.164, reading national numbers in the country given and international ones in theirs', () => {
    expect(normalizePhone(' 2125550100 ', 'US')).toEqual({ e164: '+12125550100' });
    expect(normalizePhone('020 7946 0018', 'GB')).toEqual({ e164: '+442079460018' });
    expect(normalizePhone('+44 20 7946 0018', 'US')).toEqual({ e164: '+442079460018' });
  });

  it('keeps a written extension apart', () => {
    expect(normalizePhone('+1 212 555 0100 ext. 12', 'US')).toEqual({
      e164: '+12125550100',
      extension: '12',
    });
    expect(normalizePhone('(212) 555-0100 x7', 'US')).toEqual({ e164: '+12125550100', extension: '7' });
  });

  it.each([
    ['a national number of another country', '020 7946 0018'],
    ['text around the number', 'call 212 555 0100'],
    ['too short', '12345'],
    ['empty', ''],
    ['blank', '   '],
    ['longer than 64 characters', '2'.repeat(65)],
    ['letters', 'not a phone'],
  ])('is null for %s', (_what, text) => {
    expect(normalizePhone(text, 'US')).toBeNull();
  });

  it('toE164 drops the extension and is null for what normalizePhone refuses', () => {
    expect(toE164('(212) 555-0100 ext 5')).toBe('+12125550100');
    expect(toE164('020 7946 0018', 'GB')).toBe('+442079460018');
    expect(toE164('12')).toBeNull();
  });
});

describe('parseDialable (a number the service may dial)', () => {
  it('gives the E.164 number and its country for a possible number', () => {
    expect(parseDialable('+14155550123')).toEqual({ e164: '+14155550123', country: 'US' });
    expect(parseDialable(CANADA)).toEqual({ e164: CANADA, country: 'CA' });
    expect(parseDialable(UK)).toEqual({ e164: UK, country: 'GB' });
  });

  it("marks premium-rate and shared-cost numbers (libphonenumber's full metadata), and only those", () => {
    expect(parseDialable('+19005550199')).toEqual({
      e164: '+19005550199',
      country: 'US',
      costly: 'PREMIUM_RATE',
    });
    expect(parseDialable('+449012345678')).toMatchObject({ country: 'GB', costly: 'PREMIUM_RATE' });
    expect(parseDialable('+33810123456')).toMatchObject({ country: 'FR', costly: 'SHARED_COST' });
    // Toll-free, fixed and mobile numbers cost the caller nothing extra.
    for (const n of ['+18005550199', '+14155550123', UK, CANADA])
      expect(parseDialable(n)?.costly).toBeUndefined();
  });

  // libphonenumber-js calls these possible (the right length) but not valid, and names no country:
  // a +1 area code no country uses (555, 999, even 000: NANP area codes never start with 0, but
  // only validity knows that), the UK's range kept for drama. The contract takes any possible
  // number; its country is the main one of its calling code.
  it.each([
    ['+15555550123', 'US'],
    ['+15555550000', 'US'],
    ['+19999999999', 'US'],
    ['+10005551234', 'US'],
    ['+447700900123', 'GB'],
  ])('takes %s, possible but of no country libphonenumber names, as a number of %s', (n, country) => {
    expect(parseDialable(n)).toEqual({ e164: n, country });
  });

  it('is null for what is not E.164 and a possible number of a country', () => {
    // Too short for +1; no calling code 999; not E.164; too short for +44; +800 and +882 are
    // possible numbers of non-geographic calling codes, of no country allowed_call_countries names.
    for (const n of [
      '+1212555',
      '+99912345678',
      '14155550123',
      '+1 415 555 0123',
      '',
      '+4412345678',
      '+80012345678',
      '+882123456789',
    ]) {
      expect(parseDialable(n), n).toBeNull();
    }
  });
});

describe('normalizeDialablePhone (a number to call or not to call, given on its own)', () => {
  it('a valid number as normalizePhone reads it', () => {
    expect(normalizeDialablePhone('(212) 555-0100 x7', 'US')).toEqual({
      e164: '+12125550100',
      extension: '7',
    });
    expect(normalizeDialablePhone('020 7946 0018', 'GB')).toEqual({ e164: '+442079460018' });
  });

  it('and any number the service may dial, which normalizePhone refuses, written any common way', () => {
    for (const text of ['+15555550000', '+1 (555) 555-0000', '(555) 555-0000', '555.555.0000']) {
      expect(normalizePhone(text, 'US'), text).toBeNull();
      expect(normalizeDialablePhone(text, 'US'), text).toEqual({ e164: '+15555550000' });
    }
    expect(normalizeDialablePhone('07700 900123', 'GB')).toEqual({ e164: '+447700900123' });
    expect(toDialableE164('+44 7700 900123')).toBe('+447700900123');
  });

  it.each(['12345', '555-1234', '+882123456789', '+99912345678', 'call +15555550000', '', '5'.repeat(65)])(
    'is null for %j',
    (text) => {
      expect(normalizeDialablePhone(text, 'US')).toBeNull();
    },
  );
});

describe('isKnownCountry', () => {
  it('accepts upper-case ISO 3166-1 alpha-2 codes libphonenumber knows, nothing else', () => {
    expect(isKnownCountry('US')).toBe(true);
    expect(isKnownCountry('GB')).toBe(true);
    for (const code of ['us', 'ZZ', 'USA', 'U', '', '__proto__'])
      expect(isKnownCountry(code), code).toBe(false);
  });
});

describe('nationalForms: how a person types the number in its own country', () => {
  it('national format, dashed groups, national digits and E.164, without duplicates', () => {
    expect(nationalForms('+12125550142')).toEqual([
      '(212) 555-0142',
      '212-555-0142',
      '2125550142',
      '+12125550142',
    ]);
    expect(nationalForms('+442079460958')).toEqual([
      '020 7946 0958',
      '20-7946-0958',
      '2079460958',
      '+442079460958',
    ]);
  });

  it('nothing for a number that is not valid', () => {
    expect(nationalForms('+1212')).toEqual([]);
    expect(nationalForms('12345')).toEqual([]);
  });
});
