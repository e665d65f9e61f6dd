import type { Collection } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock, type HeldLock } from '../../platform/redis-mutex.js';
import type { EffectLeaseDoc, EffectSubject, EffectSubjectDoc } from '../../platform/db/effect-records.js';
import { COLLECTIONS } from '../../platform/db/collections.js';
import { callEffectsCollection } from './calls.js';

// Writers of one call record (the place-call job, the call-event jobs, the effect recorder)
// take turns. MongoDB would not need this, but FerretDB (tests, local) rewrites the whole
// document on update from what it read, so two concurrent updates of one call could each undo
// the other's fields.

/**
 * Runs `fn` holding the lock of the call identified by `key`; a lock its holder never released
 * (a killed worker) frees itself after CALL_LOCK_MS. `keepsMemo`: `fn` is the effect recorder's,
 * which keeps the lock's memo true to what it writes (the call's effects document); any other
 * holder runs with it emptied.
 */
export function withCallLock<T>(
  services: Services,
  firm: string,
  key: string,
  fn: (held: HeldLock) => Promise<T>,
  options: { keepsMemo?: boolean } = {},
): Promise<T> {
  return withRecordLock(services.redis, redisKeys(services.config).callLock(firm, key), fn, {
    ttlMs: services.config.callLockMs,
    ...options,
  });
}

/**
 * A call as the subject of effects (its dial, the call_analyzed effects): written under its lock;
 * a running effect holds a lease (EFFECT_LEASE_MS), so another attempt waits for it.
 */
export function callSubject(services: Services, call: { _id: string; firm: string }): EffectSubject {
  return {
    collection: services.mongo.db.collection<EffectSubjectDoc>(COLLECTIONS.calls),
    id: call._id,
    exclusive: (write) => withCallLock(services, call.firm, call._id, write, { keepsMemo: true }),
    lease: effectLease(services),
  };
}

/** The lease a running effect holds (EFFECT_LEASE_MS), renewed in effect_leases: a call's, a chat's. */
export function effectLease(services: Services): NonNullable<EffectSubject['lease']> {
  return {
    collection: services.mongo.db.collection<EffectLeaseDoc>(COLLECTIONS.effectLeases),
    ms: services.config.effectLeaseMs,
    clockMarginMs: services.config.effectLeaseClockMarginMs,
  };
}

/**
 * A call as the subject of its call_analyzed effects (and the CRM's steps): as callSubject, with
 * the records in the call's own effects document (CallEffectsDoc), so no effect rewrites the call.
 */
export function callEffectsSubject(services: Services, call: { _id: string; firm: string }): EffectSubject {
  return {
    ...callSubject(services, call),
    records: callEffectsCollection(services.mongo.db) as unknown as Collection<EffectSubjectDoc>,
  };
}
