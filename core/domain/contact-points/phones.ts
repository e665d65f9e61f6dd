import { findPhoneNumbersInText, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

// Phone numbers as every area reads them (intake answers, leads, contacts, dialled numbers),
// with libphonenumber-js: E.164 out, a default country for numbers written without one.

export type { CountryCode };

/** The first valid phone number in free text, in E.164; null when there is none. */
export function findPhone(text: string, country: CountryCode = 'US'): string | null {
  const whole = parsePhoneNumberFromString(text.trim(), country);
  if (whole?.isValid()) return whole.number;
  for (const found of findPhoneNumbersInText(text, country)) {
    if (found.number.isValid()) return found.number.number;
  }
  return null;
}
