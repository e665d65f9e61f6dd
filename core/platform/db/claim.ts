import {
  MongoBulkWriteError,
  type Collection,
  type Db,
  type Document,
  type OptionalUnlessRequiredId,
} from 'mongodb';

// The one race-safe move on FerretDB and MongoDB alike: a claim is an insert of a document whose
// _id is the thing claimed. Exactly one of any number of concurrent claimants inserts it; the
// others get a duplicate-key error. Conditional updates and $inc are not atomic on FerretDB, so
// nothing that must happen once may rely on them. ("Claim" means this move and nothing else: a
// reminder's send attempt holds a lease, a dial holds a slot.)

/** MongoDB's duplicate-key error (E11000): an insert lost the race for its _id. */
export function isDuplicateKey(err: unknown): boolean {
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
export function duplicateKeyIndexes(err: unknown): number[] | null {
  if (!(err instanceof MongoBulkWriteError)) return null;
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  if (errors.length === 0 || errors.some((e) => e.code !== 11000)) return null;
  return errors.map((e) => e.index);
}

/** The most claims one coalesced insert carries. */
const COALESCED_MAX = 100;

interface PendingClaim {
  doc: Keyed;
  resolve: (claimed: boolean) => void;
  reject: (err: unknown) => void;
}
type Keyed = Document & { _id: string };
interface Coalescing {
  collection: Collection<Keyed>;
  pending: PendingClaim[];
}
/** Claims to come, by database (a process may hold more than one client) and collection. */
const coalescing = new WeakMap<Db, Map<string, Coalescing>>();

/**
 * claim(), for a hot path where many claims on one collection (of `db`) are made at once, by
 * concurrent jobs of one process: the claims made within one turn of the event loop go in one
 * unordered insert (claimMany), each answered as claim() would answer it (true: this call
 * inserted it). Fewer, larger writes: one insert command and its round trip for many documents.
 */
export function claimCoalesced<T extends Document & { _id: string }>(
  db: Db,
  collection: Collection<T>,
  doc: OptionalUnlessRequiredId<T>,
): Promise<boolean> {
  let byName = coalescing.get(db);
  if (byName === undefined) coalescing.set(db, (byName = new Map()));
  const name = collection.collectionName;
  const queues = byName;
  return new Promise<boolean>((resolve, reject) => {
    let queue = queues.get(name);
    if (queue === undefined) {
      queue = { collection: collection as unknown as Collection<Keyed>, pending: [] };
      queues.set(name, queue);
      setImmediate(() => {
        queues.delete(name);
        void flush(queue!);
      });
    }
    queue.pending.push({ doc: doc as Keyed, resolve, reject });
  });
}

async function flush(queue: Coalescing): Promise<void> {
  for (let start = 0; start < queue.pending.length; start += COALESCED_MAX) {
    const batch = queue.pending.slice(start, start + COALESCED_MAX);
    try {
      const claimed = await claimMany(
        queue.collection,
        batch.map((p) => p.doc),
      );
      for (const p of batch) p.resolve(claimed.has(p.doc._id));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
