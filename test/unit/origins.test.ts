// Origins as widget keys and CORS_ORIGINS hold them (core/platform/origins.ts): exactly what a
// browser sends as its Origin header, so a request's Origin is checked by string comparison.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { originProblem } from '../../core/platform/origins.js';

describe('originProblem', () => {
  it('accepts origins as browsers write them', () => {
    for (const origin of [
      'https://firm.example',
      'http://127.0.0.1:8080',
      'https://www.firm-law.example:8443',
      'http://[::1]:3000',
      'http://localhost:5173',
    ]) {
      expect(originProblem(origin), origin).toBeNull();
    }
  });

  it('refuses what a browser never sends, saying why', () => {
    expect(originProblem('https://firm.example:443')).toBe('is written https://firm.example by browsers');
    expect(originProblem('http://firm.example:80')).toBe('is written http://firm.example by browsers');
    for (const value of [
      'https://firm.example/',
      'https://firm.example/path',
      'https://Firm.example',
      'firm.example',
      'ftp://firm.example',
      'https://*.firm.example',
      'https://firm.example?x=1',
      'https://user@firm.example',
      'null',
      '',
      'https://firm.example:99999',
    ]) {
      expect(originProblem(value), value).not.toBeNull();
    }
  });

  it('what it accepts is exactly the origin the URL parser gives (property)', () => {
    const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/);
    const host = fc.array(label, { minLength: 1, maxLength: 4 }).map((labels) => labels.join('.'));
    const origin = fc
      .tuple(fc.constantFrom('http', 'https'), host, fc.option(fc.integer({ min: 1, max: 65535 })))
      .map(([scheme, h, port]) => `${scheme}://${h}${port === null ? '' : `:${port}`}`);
    fc.assert(
      fc.property(origin, (value) => {
        let parsed: string | null = null;
        try {
          parsed = new URL(value).origin;
        } catch {
          parsed = null;
        }
        expect(originProblem(value) === null).toBe(parsed === value);
      }),
    );
  });
});
