import type { Services } from '../../wiring/services.js';
import { isRedisUnavailable } from '../../platform/errors.js';
import { callsCollection, shownCallId, withCallEffects, type CallDoc } from './calls.js';
import { inboundCallId } from './call-keys.js';
import { decodeCursor, encodeCursor, invalidCursor, keysetPage } from '../../platform/db/keyset-cursor.js';
import { isListPosition, readCallList, rebuildCallList, type ListPosition } from './call-list-index.js';

// list-calls: a firm's finished calls, newest end_timestamp first, ties by call_id descending.
// The page's positions come from the firm's call-list index (call-list-index.ts: one Redis
// range read, the same cost at 1,000 calls as at 20,000, on MongoDB and FerretDB alike), the
// calls themselves from point reads by _id. A finished call's end_timestamp never changes, and a
// call finishing later takes its own place in the order (before the cursor when it is newer), so
// paging never repeats or skips a call while others finish. The cursor is the position {t, i}
// as before this index, so cursors issued earlier keep working.

const SCOPE = 'list-calls';
/** Point reads in flight at once for one page (a page is at most 1,000 calls). */
const READS_IN_FLIGHT = 50;

export async function listFinishedCalls(
  services: Services,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ calls: CallDoc[]; next_cursor: string }> {
  const secret = services.config.sessionSecret;
  let after: ListPosition | null = null;
  if (cursor) {
    const p = decodeCursor(secret, SCOPE, firm, cursor);
    const position = { t: p.t, i: p.i };
    if (!isListPosition(position)) throw invalidCursor();
    after = position;
  }
  let positions: ListPosition[] | null = null;
  try {
    positions = await readCallList(services, firm, after, limit + 1);
    if (positions === null && (await rebuildCallList(services, firm))) {
      positions = await readCallList(services, firm, after, limit + 1);
    }
  } catch (err) {
    // A read of MongoDB alone before this index: it keeps working while Redis is down.
    if (!isRedisUnavailable(err)) throw err;
  }
  if (positions === null) {
    // Redis is down, or another process is building the firm's set: this page comes from
    // MongoDB, in the same order and with the same cursors, at MongoDB's cost.
    const order = { primary: { field: 'end_timestamp', kind: 'number' as const }, tie: 'call_id' };
    const page = await keysetPage(
      callsCollection(services.mongo.db),
      { secret, scope: SCOPE, firm, order },
      { firm, finished: true },
      limit,
      cursor,
    );
    const calls: CallDoc[] = [];
    for (let start = 0; start < page.rows.length; start += READS_IN_FLIGHT) {
      const slice = page.rows.slice(start, start + READS_IN_FLIGHT);
      calls.push(...(await Promise.all(slice.map((call) => withCallEffects(services.mongo.db, call)))));
    }
    return { calls, next_cursor: page.next_cursor };
  }
  const page = positions.slice(0, limit);
  const calls = await readCalls(services, firm, page);
  const last = page.at(-1);
  const next_cursor =
    positions.length > limit && last !== undefined
      ? encodeCursor(secret, SCOPE, firm, { t: last.t, i: last.i })
      : '';
  return { calls, next_cursor };
}

/**
 * The calls at `positions`, in order, by point reads, each with its effects (one more point
 * read); a call not of this firm or not finished is left out. A position names the call as the
 * API shows it: the call whose _id that is, else the firm's inbound call shown under that
 * provider id (_id inboundCallId's hash: one more point read, for inbound calls only).
 */
async function readCalls(services: Services, firm: string, positions: ListPosition[]): Promise<CallDoc[]> {
  const db = services.mongo.db;
  const coll = callsCollection(db);
  const found: Array<CallDoc | null> = new Array(positions.length).fill(null);
  const shown = (doc: CallDoc | null, id: string): doc is CallDoc =>
    doc !== null && doc.firm === firm && doc.finished && shownCallId(doc) === id;
  const read = async (id: string): Promise<CallDoc | null> => {
    let doc = await coll.findOne({ _id: id });
    if (!shown(doc, id)) doc = await coll.findOne({ _id: inboundCallId(firm, id) });
    return shown(doc, id) ? withCallEffects(db, doc) : null;
  };
  for (let start = 0; start < positions.length; start += READS_IN_FLIGHT) {
    const slice = positions.slice(start, start + READS_IN_FLIGHT);
    const docs = await Promise.all(slice.map((p) => read(p.i)));
    docs.forEach((doc, k) => (found[start + k] = doc));
  }
  return found.filter((doc): doc is CallDoc => doc !== null && doc.firm === firm && doc.finished);
}
