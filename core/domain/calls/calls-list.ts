import type { Db, Filter } from 'mongodb';
import { callsCollection, type CallDoc } from './calls.js';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/db/keyset-cursor.js';

// list-calls: a firm's finished calls, newest end_timestamp first, ties by call_id descending,
// read by keyset over the index {firm, finished, end_timestamp, call_id}. A finished call's
// end_timestamp never changes, and calls finishing later sort before any cursor, so paging
// never repeats or skips a call while new calls finish.

const SCOPE = 'list-calls';

export async function listFinishedCalls(
  db: Db,
  secret: string,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ calls: CallDoc[]; next_cursor: string }> {
  const filter: Filter<CallDoc> = { firm, finished: true };
  if (cursor) {
    const { t, i } = decodeCursor(secret, SCOPE, firm, cursor);
    if (typeof t !== 'number' || typeof i !== 'string') throw invalidCursor();
    filter.$or = [{ end_timestamp: { $lt: t } }, { end_timestamp: t, call_id: { $lt: i } }];
  }
  const rows = await callsCollection(db)
    .find(filter)
    .sort({ end_timestamp: -1, call_id: -1 })
    .limit(limit + 1)
    .toArray();
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const next_cursor =
    rows.length > limit && last !== undefined
      ? encodeCursor(secret, SCOPE, firm, { t: last.end_timestamp ?? 0, i: last.call_id })
      : '';
  return { calls: page, next_cursor };
}
