import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { cachedRead, changeCached } from '../../platform/db/read-cache.js';
import { UnavailableError } from '../../platform/errors.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { updateById } from '../../platform/db/upsert.js';

// POST /api/auth/revoke-sessions: every session token of a firm issued before the call stops
// working. A key document per firm (`_id` = the slug) holds the time from which its session
// tokens are accepted again; verifying a firm's session token reads it by _id. Platform sessions
// (firm "*") have theirs under `_id` "*", which no slug can be. API keys never read it.

/** The revocation key of platform session tokens: their `firm` claim. */
export const PLATFORM_SESSIONS = '*';

interface SessionRevocationDoc {
  _id: string;
  /** A firm session token is refused unless its `iat` is at or after this time. */
  revoked_before: Date;
}

const revocations = (db: Db) => collection<SessionRevocationDoc>(db, COLLECTIONS.sessionRevocations);

/**
 * Revokes every session token of `firm` (a slug, or PLATFORM_SESSIONS) issued up to now. `iat` has whole seconds, so a token
 * issued later in the current second cannot be told from one issued before the call: the
 * revocation covers the whole current second, and `revoked_before` is the next whole second
 * (a client signs in again from then on). Never moves back: the writers of one firm's
 * revocation take turns (FerretDB's `$max` is a read then a write).
 */
export async function revokeSessions(services: Services, firm: string): Promise<Date> {
  if (services.redis.status !== 'ready') throw new UnavailableError('redis');
  const lockKey = redisKeys(services.config).sessionRevocationLock(firm);
  return withRecordLock(services.redis, lockKey, async () => {
    const revokedBefore = new Date((Math.floor(Date.now() / 1000) + 1) * 1000);
    const docs = revocations(services.mongo.db);
    await changeCached(services.mongo.db, () =>
      updateById(docs, firm, { $max: { revoked_before: revokedBefore } }),
    );
    const stored = await docs.findOne({ _id: firm });
    return stored?.revoked_before ?? revokedBefore;
  });
}

/**
 * Whether a session token of `firm` (a slug, or PLATFORM_SESSIONS) issued at `issuedAt` (seconds;
 * none: unknown) was revoked.
 */
export async function isSessionRevoked(db: Db, firm: string, issuedAt: number | undefined): Promise<boolean> {
  // Most firms have no revocation: "none" is cached too (revokeSessions announces the change).
  const doc = await cachedRead(
    db,
    COLLECTIONS.sessionRevocations,
    firm,
    () => revocations(db).findOne({ _id: firm }),
    {
      cacheMissing: true,
    },
  );
  if (doc === null) return false;
  return issuedAt === undefined || issuedAt * 1000 < doc.revoked_before.getTime();
}
