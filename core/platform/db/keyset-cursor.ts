import { createHmac } from 'node:crypto';
import type { Collection, Document, Filter, WithId } from 'mongodb';
import { invalidRequest, type AppError } from '../errors.js';
import { safeEqual } from '../crypto.js';

// Opaque, tamper-evident keyset cursors: base64url(JSON {s: scope, f: firm, p: position}) + "." +
// base64url(HMAC-SHA256). The key is derived from SESSION_SECRET for this one purpose, and the
// scope and firm are inside the MAC, so a cursor works only for the list and firm it came from.

type KeysetPosition = Record<string, string | number>;

/** The longest cursor read; the ones issued are a few hundred characters. */
const MAX_CURSOR_CHARS = 2048;

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
  // Longer than any cursor issued (a position of a few keys): refused before it is split or MACed.
  if (cursor.length > MAX_CURSOR_CHARS) throw invalidCursor();
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

/** The sort of a keyset list: a primary field, then a unique tie-breaker, both descending. */
export interface KeysetOrder {
  /** The primary sort field and how its values are held (dates travel in cursors as ms). */
  primary: { field: string; kind: 'date' | 'number' | 'string' };
  /** A unique field that breaks ties (`_id`, `call_id`). */
  tie: string;
}

/**
 * One page of a keyset list, newest first: `filter` ∧ (after the cursor's position), sorted by
 * the order's fields descending over an index on them. Rows added meanwhile sort before any
 * cursor, so paging never repeats or skips a row. `next_cursor` is "" on the last page.
 */
export async function keysetPage<T extends Document>(
  coll: Collection<T>,
  list: { secret: string; scope: string; firm: string; order: KeysetOrder },
  filter: Filter<T>,
  limit: number,
  cursor: string | undefined,
): Promise<{ rows: WithId<T>[]; next_cursor: string }> {
  const { primary, tie } = list.order;
  const query: Record<string, unknown> = { ...filter };
  if (cursor) {
    const { t, i } = decodeCursor(list.secret, list.scope, list.firm, cursor);
    const expected = primary.kind === 'string' ? 'string' : 'number';
    if (typeof t !== expected || typeof i !== 'string') throw invalidCursor();
    const at = primary.kind === 'date' ? new Date(t as number) : t;
    query.$or = [{ [primary.field]: { $lt: at } }, { [primary.field]: at, [tie]: { $lt: i } }];
  }
  const rows = await coll
    .find(query as Filter<T>)
    .sort({ [primary.field]: -1, [tie]: -1 })
    .limit(limit + 1)
    .toArray();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1] as Record<string, unknown> | undefined;
  if (rows.length <= limit || last === undefined) return { rows: page, next_cursor: '' };
  const value = last[primary.field];
  const t = value instanceof Date ? value.getTime() : ((value as string | number | null) ?? 0);
  return {
    rows: page,
    next_cursor: encodeCursor(list.secret, list.scope, list.firm, { t, i: String(last[tie]) }),
  };
}
