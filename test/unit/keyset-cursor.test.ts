// Keyset cursors (core/platform/db/keyset-cursor.ts), their pure part: opaque, tamper-evident,
// and good only for the list and firm they were issued for. Paging over a collection is tested
// with the lists (test/calls, test/contacts, ...).
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../core/platform/db/keyset-cursor.js';
import { AppError } from '../../core/platform/errors.js';

const SECRET = 'a-session-secret-of-32-characters';
const POSITION = { t: 1_700_000_000_000, i: 'call_01' };

/** The error decodeCursor throws for a cursor read as (scope, firm) under `secret`. */
function refusal(cursor: string, scope = 'calls', firm = 'acme', secret = SECRET): AppError {
  try {
    decodeCursor(secret, scope, firm, cursor);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error(`decodeCursor accepted ${JSON.stringify(cursor)}`);
}

const base64url = (text: string) => Buffer.from(text).toString('base64url');

describe('keyset cursors', () => {
  it('give back the position they carry, for the list and firm they came from', () => {
    const cursor = encodeCursor(SECRET, 'calls', 'acme', POSITION);
    expect(decodeCursor(SECRET, 'calls', 'acme', cursor)).toEqual(POSITION);
    const text = encodeCursor(SECRET, 'contacts', 'acme', { t: 'Doe, Jane', i: 'c 1/ü' });
    expect(decodeCursor(SECRET, 'contacts', 'acme', text)).toEqual({ t: 'Doe, Jane', i: 'c 1/ü' });
  });

  it('are URL-safe: base64url payload and signature, one dot', () => {
    const cursor = encodeCursor(SECRET, 'calls', 'acme', { t: 1, i: '+/=?&' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('are refused for another list, another firm, or under another secret: 400 invalid_cursor', () => {
    const cursor = encodeCursor(SECRET, 'calls', 'acme', POSITION);
    for (const err of [
      refusal(cursor, 'contacts', 'acme'),
      refusal(cursor, 'calls', 'other-firm'),
      refusal(cursor, 'calls', 'acme', 'another-secret-of-32-characters!!'),
    ]) {
      expect(err.status).toBe(400);
      expect(err.code).toBe('invalid_cursor');
      expect(err.details).toEqual([{ path: '/cursor', message: expect.any(String) }]);
    }
  });

  it('are refused when the payload or the signature is changed', () => {
    const cursor = encodeCursor(SECRET, 'calls', 'acme', POSITION);
    const [payload, signature] = cursor.split('.') as [string, string];
    // The same firm and list, an earlier position: what someone paging would like to forge.
    const forged = base64url(JSON.stringify({ s: 'calls', f: 'acme', p: { t: 0, i: 'call_00' } }));
    expect(refusal(`${forged}.${signature}`).code).toBe('invalid_cursor');
    const flipped = signature.startsWith('A') ? `B${signature.slice(1)}` : `A${signature.slice(1)}`;
    expect(refusal(`${payload}.${flipped}`).code).toBe('invalid_cursor');
    expect(refusal(`${payload}.${signature.slice(0, -2)}`).code).toBe('invalid_cursor');
  });

  it.each([
    ['empty', ''],
    ['a dot only', '.'],
    ['no signature', 'eyJzIjoiY2FsbHMifQ'],
    ['no payload', '.c2ln'],
    ['three parts', 'a.b.c'],
    ['not base64url', '%%%.%%%'],
    ['a very long string', 'x'.repeat(100_000)],
  ])('are refused when %s', (_what, cursor) => {
    expect(refusal(cursor).code).toBe('invalid_cursor');
  });

  it('are refused when a signed payload is not a position (a cursor from a broken issuer)', () => {
    // Signed with the right key, so only the payload checks can refuse them.
    const signedAs = (position: unknown) => encodeCursor(SECRET, 'calls', 'acme', position as never);
    expect(refusal(signedAs(null)).code).toBe('invalid_cursor');
    expect(refusal(signedAs('t')).code).toBe('invalid_cursor');
  });
});
