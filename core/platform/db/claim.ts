import { MongoBulkWriteError, type Collection, type Document, type OptionalUnlessRequiredId } from 'mongodb';

// The one race-safe move on FerretDB and MongoDB alike: a claim is an insert of a document whose
// _id is the thing claimed. Exactly one of any number of concurrent claimants inserts it; the
// others get a duplicate-key error. Conditional updates and $inc are not atomic on FerretDB, so
// nothing that must happen once may rely on them. ("Claim" means this move and nothing else: a
// reminder's send attempt holds a lease, a dial holds a slot.)

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

/** How many claims one insertMany carries: a batch with a taken _id is slower on FerretDB, so keep them small. */
const CLAIM_BATCH = 500;

/**
 * Claims many _ids at once: unordered inserts in batches, each taken _id reported by its own
 * duplicate-key error, never looked up first. Returns the _ids this call claimed; the others
 * were held already (by anyone, this caller included: the caller tells its own apart).
 */
export async function claimMany<T extends Document & { _id: string }>(
  collection: Collection<T>,
  docs: OptionalUnlessRequiredId<T>[],
): Promise<Set<string>> {
  const claimed = new Set<string>();
  for (let start = 0; start < docs.length; start += CLAIM_BATCH) {
    const batch = docs.slice(start, start + CLAIM_BATCH);
    const taken = new Set<number>();
    try {
      await collection.insertMany(batch, { ordered: false });
    } catch (err) {
      const writeErrors = duplicateKeyIndexes(err);
      if (writeErrors === null) throw err;
      for (const index of writeErrors) taken.add(index);
    }
    batch.forEach((doc, i) => {
      if (!taken.has(i)) claimed.add((doc as { _id: string })._id);
    });
  }
  return claimed;
}

/** The batch positions of an unordered insert's write errors when every one is a duplicate key; else null. */
function duplicateKeyIndexes(err: unknown): number[] | null {
  if (!(err instanceof MongoBulkWriteError)) return null;
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  if (errors.length === 0 || errors.some((e) => e.code !== 11000)) return null;
  return errors.map((e) => e.index);
}
