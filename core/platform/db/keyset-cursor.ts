import { createHmac } from 'node:crypto';
import { invalidRequest, type AppError } from '../errors.js';
import { safeEqual } from '../crypto.js';

// Opaque, tamper-evident keyset cursors: base64url(JSON {s: scope, f: firm, p: position}) + "." +
// base64url(HMAC-SHA256). The key is derived from SESSION_SECRET for this one purpose, and the
// scope and firm are inside the MAC, so a cursor works only for the list and firm it came from.

type KeysetPosition = Record<string, string | number>;

const cursorKey = (secret: string): Buffer =>
  createHmac('sha256', secret).update('intake-service/keyset-cursor/v1').digest();

const mac = (secret: string, payload: string): string =>
  createHmac('sha256', cursorKey(secret)).update(payload).digest('base64url');

export function encodeCursor(secret: string, scope: string, firm: string, position: KeysetPosition): string {
  const payload = Buffer.from(JSON.stringify({ s: scope, f: firm, p: position })).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

export const invalidCursor = (): AppError =>
  invalidRequest(
    'The cursor is not valid for this list and firm; start again without a cursor.',
    [{ path: '/cursor', message: 'is not a cursor issued for this list and firm' }],
    'invalid_cursor',
  );

/** The position inside a cursor issued for this scope and firm; 400 invalid_cursor otherwise. */
export function decodeCursor(secret: string, scope: string, firm: string, cursor: string): KeysetPosition {
  const [payload, signature, ...rest] = cursor.split('.');
  if (!payload || !signature || rest.length > 0 || !safeEqual(signature, mac(secret, payload))) {
    throw invalidCursor();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  const { s, f, p } = (parsed ?? {}) as { s?: unknown; f?: unknown; p?: unknown };
  if (s !== scope || f !== firm || typeof p !== 'object' || p === null) throw invalidCursor();
  return p as KeysetPosition;
}
