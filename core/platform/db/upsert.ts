import type { Collection, Document, Filter, UpdateFilter, WithoutId } from 'mongodb';
import { isDuplicateKey } from './claim.js';

// Writes that make their document when it is missing (an upsert), by _id. Two upserts of the same
// new _id at once can both find nothing and both insert: the second insert fails with a
// duplicate key (E11000). MongoDB makes such a write again itself for an _id filter; FerretDB
// does not, and answers one of two concurrent upserts of a new _id with E11000 most of the time.
// The document is there by then, so the same write again updates it, as it would have had it come
// second. Every upsert goes through these two: a plain `upsert: true` fails a request or a job
// whenever another writer of the same document is at the same moment
// (docs/operations.md#where-ferretdb-differs-and-what-the-code-does-about-it).

/** How many times a write lost to a concurrent insert of its _id is made again. */
const ATTEMPTS = 5;

async function again<R>(write: () => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      // Each loss means another writer inserted it just now; a delete in between can repeat it.
      if (!isDuplicateKey(err) || attempt >= ATTEMPTS) throw err;
    }
  }
}

/** Replaces document `id` with `doc`, making it if missing; true when it was made. */
export async function replaceById<T extends Document & { _id: string }>(
  collection: Collection<T>,
  id: string,
  doc: WithoutId<T>,
): Promise<boolean> {
  const filter = { _id: id } as Filter<T>;
  const result = await again(() => collection.replaceOne(filter, doc, { upsert: true }));
  return result.upsertedCount > 0;
}

/** Applies `update` to document `id`, making it (from the update's fields) if missing; true when it was made. */
export async function updateById<T extends Document & { _id: string }>(
  collection: Collection<T>,
  id: string,
  update: UpdateFilter<T>,
): Promise<boolean> {
  const filter = { _id: id } as Filter<T>;
  const result = await again(() => collection.updateOne(filter, update, { upsert: true }));
  return result.upsertedCount > 0;
}
