import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from './collections.js';
import { idempotencyKeyInUse, invalidRequest } from '../errors.js';
import { claim } from './claim.js';
import { setTimeout as sleep } from 'node:timers/promises';

// Idempotency-Key support without transactions or TTL indexes: one key document per
// (scope, firm, key) whose _id is that triple, so MongoDB's unique _id decides the race.
// The first request claims the key with its resource id (pending), creates the resource and
// marks the key done; repeats wait for done and return the same resource id.

const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
/** How long a repeat waits for the first request to finish before answering 409. */
const WAIT_FOR_FIRST_MS = 10_000;
/** A pending key older than this belongs to a request that died half-way. */
const STALE_PENDING_MS = 60_000;
const POLL_MS = 25;

interface IdempotencyKeyDoc {
  _id: string;
  scope: string;
  firm: string;
  key: string;
  resource_id: string;
  state: 'pending' | 'done';
  created_at: Date;
  updated_at: Date;
}

const keys = (db: Db) => collection<IdempotencyKeyDoc>(db, COLLECTIONS.idempotencyKeys);

/** Printable ASCII, 1–255 characters (what Stripe and the IETF draft allow in practice). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$';
const KEY_FORM = new RegExp(IDEMPOTENCY_KEY_PATTERN);

export function assertValidIdempotencyKey(key: string): void {
  if (!KEY_FORM.test(key)) {
    throw invalidRequest(
      'The Idempotency-Key header must be 1 to 255 printable ASCII characters without spaces.',
      [{ path: '/headers/idempotency-key', message: 'is not a valid idempotency key' }],
    );
  }
}

/**
 * The resource a finished request with this key made within 24 h, or null: read before a repeat
 * is checked again, so a repeat answers what the first request got even when what the request
 * names has changed since (its agent deleted, a country taken off the firm's list).
 */
export async function doneIdempotent(
  db: Db,
  id: { scope: string; firm: string; key: string },
): Promise<string | null> {
  const existing = await keys(db).findOne({ _id: keyIdOf(id) });
  return existing !== null && !expired(existing) && existing.state === 'done' ? existing.resource_id : null;
}

/** A key document's _id: the (scope, firm, key) triple, so MongoDB's unique _id decides the race. */
const keyIdOf = (id: { scope: string; firm: string; key: string }): string =>
  `${id.scope}|${id.firm}|${id.key}`;

/** A key older than the window names nothing any more: the next request with it starts afresh. */
const expired = (doc: IdempotencyKeyDoc): boolean =>
  doc.created_at.getTime() <= Date.now() - IDEMPOTENCY_WINDOW_MS;

/**
 * Runs `create` at most once per key within 24 h. `resourceId` is the id the resource gets if
 * this request wins; `recover` finishes a dead request's work (true) or reports that its
 * resource was never created (false), for keys left pending by a crash.
 */
export async function runIdempotent(
  db: Db,
  id: { scope: string; firm: string; key: string },
  resourceId: string,
  create: () => Promise<void>,
  recover: (resourceId: string) => Promise<boolean>,
): Promise<{ resourceId: string; created: boolean }> {
  const _id = keyIdOf(id);
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    const now = new Date();
    const doc: IdempotencyKeyDoc = {
      _id,
      ...id,
      resource_id: resourceId,
      state: 'pending',
      created_at: now,
      updated_at: now,
    };
    if (await claimKey(db, doc)) {
      try {
        await create();
      } catch (err) {
        await keys(db)
          .deleteOne({ _id, resource_id: resourceId })
          .catch(() => {});
        throw err;
      }
      // If this write is lost, the key stays pending and a later repeat recovers it.
      await keys(db)
        .updateOne({ _id, resource_id: resourceId }, { $set: { state: 'done', updated_at: new Date() } })
        .catch(() => {});
      return { resourceId, created: true };
    }
    const existing = await keys(db).findOne({ _id });
    if (existing === null) continue;
    const old = expired(existing);
    if (!old && existing.state === 'done') return { resourceId: existing.resource_id, created: false };
    if (!old && existing.created_at.getTime() <= Date.now() - STALE_PENDING_MS) {
      if (await recover(existing.resource_id)) {
        await keys(db).updateOne(
          { _id, resource_id: existing.resource_id },
          { $set: { state: 'done', updated_at: new Date() } },
        );
        return { resourceId: existing.resource_id, created: false };
      }
      await keys(db).deleteOne({ _id, resource_id: existing.resource_id, state: 'pending' });
      continue;
    }
    // The first request is still at work, or another request is taking over the expired key.
    if (Date.now() > deadline) {
      // Retry-After: when a key still pending will be judged abandoned (its request died) and
      // recovered by the next repeat; at least a second.
      const staleInMs = existing.created_at.getTime() + STALE_PENDING_MS - Date.now();
      throw idempotencyKeyInUse(Math.min(60, Math.max(1, Math.ceil(staleInMs / 1000))));
    }
    await sleep(POLL_MS);
  }
}

/**
 * Inserts the key. An expired key (older than 24 h) is taken over by exactly one claimant: the
 * one that inserts the takeover marker of that generation (`<key>|takeover|<old created_at>`).
 * A conditional replace would not do: FerretDB applies it as a read and a write, and two
 * claimants could both win; a unique _id is atomic everywhere.
 */
async function claimKey(db: Db, doc: IdempotencyKeyDoc): Promise<boolean> {
  if (await claim(keys(db), doc)) return true;
  const current = await keys(db).findOne({ _id: doc._id });
  if (current === null || current.created_at.getTime() > Date.now() - IDEMPOTENCY_WINDOW_MS) return false;
  // The marker expires with the pruning of key records like any other.
  const marker = {
    ...doc,
    _id: `${doc._id}|takeover|${current.created_at.getTime()}`,
    state: 'done' as const,
  };
  if (!(await claim(keys(db), marker))) return false;
  await keys(db).replaceOne({ _id: doc._id }, doc);
  return true;
}

/**
 * Deletes key records whose 24 h window has passed (no TTL index on FerretDB; the maintenance
 * queue runs this hourly). A repeat after the window is a new request in any case.
 */
export async function pruneIdempotencyKeys(db: Db, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
  return (await keys(db).deleteMany({ created_at: { $lt: before } })).deletedCount;
}
