import type { Db } from 'mongodb';
import { callsCollection, type CallDoc } from './calls.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';

// list-calls: a firm's finished calls, newest end_timestamp first, ties by call_id descending,
// read by keyset over the index {firm, finished, end_timestamp, call_id}. A finished call's
// end_timestamp never changes, and calls finishing later sort before any cursor, so paging
// never repeats or skips a call while new calls finish.

export async function listFinishedCalls(
  db: Db,
  secret: string,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ calls: CallDoc[]; next_cursor: string }> {
  const order = { primary: { field: 'end_timestamp', kind: 'number' as const }, tie: 'call_id' };
  const page = await keysetPage(
    callsCollection(db),
    { secret, scope: 'list-calls', firm, order },
    { firm, finished: true },
    limit,
    cursor,
  );
  return { calls: page.rows, next_cursor: page.next_cursor };
}
