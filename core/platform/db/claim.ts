import type { Collection, Document, OptionalUnlessRequiredId } from 'mongodb';

// The one race-safe move on FerretDB and MongoDB alike (README: Concurrency on FerretDB): a
// claim is an insert of a document whose _id is the thing claimed. Exactly one of any number of
// concurrent claimants inserts it; the others get a duplicate-key error. Conditional updates and
// $inc are not atomic on FerretDB, so nothing that must happen once may rely on them.

/** MongoDB's duplicate-key error (E11000): an insert lost the race for its _id. */
function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;
}

/** Inserts `doc`; true when this call claimed its _id, false when another holder has it. */
export async function claim<T extends Document>(
  collection: Collection<T>,
  doc: OptionalUnlessRequiredId<T>,
): Promise<boolean> {
  try {
    await collection.insertOne(doc);
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}
