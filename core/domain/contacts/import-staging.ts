import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';

// A waiting import's rows live in MongoDB, not in its job (docs/contacts.md#memory): a job
// carrying 16 MiB of rows stays that size in Redis while it waits and after it completes. The
// request writes the rows as JSON text in pieces of about a million characters, each its own
// document `<job_id>:<n>` (n from 0), before it answers; the worker reads them back in order,
// by _id, and they are deleted once the import has completed or failed for good. A contacts
// sync's page is staged under a name of its runner's own, `<job_id>~<random>:<n>`, which its
// import record names (rows_at): two runners of one sync preparing the same page never touch
// each other's pieces (contact-sync-pages.ts).
//
// Pieces of one text rather than groups of rows: a single row may be nearly as large as the
// body (16 MiB), more than one document may hold, and JSON text keeps any key a row has
// ("a.b", "$x", "__proto__") as the row had it, which a stored document could not.

export interface ImportChunkDoc {
  /** `<job_id>:<n>`. */
  _id: string;
  import_id: string;
  firm: string;
  /** Its piece of the rows' JSON text. */
  text: string;
  created_at: Date;
}

/** Characters per piece: at most 3 MB of UTF-8, well under a document's 16 MiB. */
const PIECE_CHARS = 1_000_000;

const chunks = (db: Db) => collection<ImportChunkDoc>(db, COLLECTIONS.contactImportChunks);
const chunkId = (importId: string, n: number) => `${importId}:${n}`;

/** The JSON text cut into pieces, never between the two halves of a surrogate pair. */
function pieces(text: string): string[] {
  const out: string[] = [];
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + PIECE_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

/** The rows as JSON text, in the pieces they are stored in. */
export function splitImportRows(rows: unknown[]): string[] {
  return pieces(JSON.stringify(rows));
}

/**
 * Stores the pieces of an import's rows. When a write fails, the pieces already written are
 * deleted (best effort) and the error is thrown: the import is not accepted.
 */
export async function stageImportRows(
  db: Db,
  ref: { importId: string; firm: string },
  parts: readonly string[],
): Promise<void> {
  const createdAt = new Date();
  let written = 0;
  try {
    for (const [n, text] of parts.entries()) {
      await chunks(db).insertOne({
        _id: chunkId(ref.importId, n),
        import_id: ref.importId,
        firm: ref.firm,
        text,
        created_at: createdAt,
      });
      written = n + 1;
    }
  } catch (err) {
    await discardImportRows(db, ref.importId, written).catch(() => {});
    throw err;
  }
}

/** The rows of an import, read back piece by piece; null when a piece is missing (discarded). */
export async function readImportRows(db: Db, importId: string, count: number): Promise<unknown[] | null> {
  if (count === 0) return null;
  const parts: string[] = [];
  for (let n = 0; n < count; n++) {
    const doc = await chunks(db).findOne({ _id: chunkId(importId, n) });
    if (doc === null) return null;
    parts.push(doc.text);
  }
  const rows: unknown = JSON.parse(parts.join(''));
  return Array.isArray(rows) ? rows : null;
}

/** Deletes an import's pieces (one delete by _id each). Safe to repeat. */
export async function discardImportRows(db: Db, importId: string, count: number): Promise<void> {
  for (let n = 0; n < count; n++) await chunks(db).deleteOne({ _id: chunkId(importId, n) });
}
