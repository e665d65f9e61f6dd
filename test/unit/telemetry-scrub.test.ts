// What leaves the process in a span (core/platform/telemetry/scrub.ts): no phone in full, no
// query string, no secret in an outgoing URL's path, no email address.
import { describe, expect, it } from 'vitest';
import {
  maskEmails,
  maskPersonal,
  maskPhones,
  scrubAttributes,
  scrubUrl,
} from '../../core/platform/telemetry/scrub.js';

describe('span scrubbing', () => {
  it('masks phone numbers to their last 4 digits, wherever they stand', () => {
    expect(maskPhones('cc|camp_1|+14155550123|1')).toBe('cc|camp_1|…0123|1');
    expect(maskPhones('call 4155550123 now')).toBe('call …0123 now');
    // Ids made of base64url characters are left alone: their digits touch letters.
    expect(maskPhones('call_zQ1234567890abc')).toBe('call_zQ1234567890abc');
    expect(maskPhones('port 6379, 2024')).toBe('port 6379, 2024');
  });

  it('cuts query strings from every URL, and secret path segments from outgoing ones', () => {
    expect(scrubUrl('/api/widget/session?key=wk_abcdef', false)).toBe('/api/widget/session');
    expect(scrubUrl('https://hooks.slack.com/services/T0123/B0456/shortsecret', true)).toBe(
      'https://hooks.slack.com/services/:team/:hook/:secret',
    );
    expect(scrubUrl('https://app.clio.com/api/v4/contacts/aBcDeFgHiJkLmNoPqRsT.json?x=1', true)).toBe(
      'https://app.clio.com/api/v4/contacts/aBcDeFgHiJkLmNoPqRsT.json',
    );
    expect(scrubUrl('https://api.example.com/hooks/aBcDeFgHiJkLmNoPqRsTuV', true)).toBe(
      'https://api.example.com/hooks/:redacted',
    );
    expect(scrubUrl('https://user:pw@api.example.com/v1', true)).toBe('https://api.example.com/v1');
    // The service's own paths stay readable on server spans.
    expect(scrubUrl('/api/v2/smith-and-jones-law-group/webhook', false)).toBe(
      '/api/v2/smith-and-jones-law-group/webhook',
    );
  });

  it('applies both to attributes by their meaning', () => {
    expect(
      scrubAttributes(
        {
          'url.query': 'token=abc',
          'url.full': 'http://h/services/T/B/s?x=1',
          'bullmq.job.id': 'cc|c1|+14155550123|2',
          'http.response.status_code': 200,
          tags: ['+14155550123', 3],
        },
        true,
      ),
    ).toEqual({
      'url.query': '[redacted]',
      'url.full': 'http://h/services/:team/:hook/:secret',
      'bullmq.job.id': 'cc|c1|…0123|2',
      'http.response.status_code': 200,
      tags: ['…0123', 3],
    });
  });

  it('masks email addresses, wherever they stand', () => {
    expect(maskEmails('reminder|firm-a|bk-1|r|1764600000000|60|ann.lee+x@example.co.uk')).toBe(
      'reminder|firm-a|bk-1|r|1764600000000|60|[email]',
    );
    expect(maskEmails('to Ann.Lee@Example.com, bob@b.example')).toBe('to [email], [email]');
    // What an address may carry unquoted is part of it, nothing of the local part left behind;
    // the separators of ids and URLs are not.
    expect(maskEmails("call Sean.O'Brien@example.com or a!b{d}~e@x.io")).toBe('call [email] or [email]');
    expect(maskEmails('/leads?email=ann@example.com&x=1#bob@example.com')).toBe(
      '/leads?email=[email]&x=1#[email]',
    );
    // No @, or no domain with a dot: not an address.
    expect(maskEmails('user@localhost and a@b')).toBe('user@localhost and a@b');
    expect(maskPersonal('send-reminder r|1|60|ann@example.com +14155550123')).toBe(
      'send-reminder r|1|60|[email] …0123',
    );
    expect(
      scrubAttributes(
        {
          'bullmq.job.id': 'reminder|firm-a|bk-1|r_1764600000000_60_ann@example.com',
          'url.full': 'http://h/x/ann@example.com',
          tags: ['bob@example.com'],
        },
        true,
      ),
    ).toEqual({
      // `_` may stand in a local part, so the whole run before the @ goes.
      'bullmq.job.id': 'reminder|firm-a|bk-1|[email]',
      'url.full': 'http://h/x/[email]',
      tags: ['[email]'],
    });
  });
});
