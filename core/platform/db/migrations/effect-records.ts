import type { Db, Document } from 'mongodb';
import { COLLECTIONS } from '../collections.js';
import type { RedisClient } from '../../redis.js';
import { redisKeys } from '../../redis-keys.js';
import { withRecordLock } from '../../redis-mutex.js';
import { updateById } from '../upsert.js';

// Effect records that older versions kept on their subject document, moved to the subject's
// records document (core/platform/db/effect-recorder.ts, `records`): for calls, `effects.*` and
// `crm_sync.*` into call_effects (`_id` = the call's), so that an effect of a call stored before
// finds its record where this version looks (a done effect is not done again, a running one is
// reconciled) and get-call shows it.
//
// One streaming cursor over the calls that hold any record, projected to the records and the
// firm; per call, under the call's lock (the writers of one call take turns: FerretDB rewrites
// whole documents): each record the records document lacks is copied there (one a process of
// this version wrote already stands), then the moved paths leave the call. Safe to run again: a
// call left with nothing to move is not matched. Release runs before this version's processes
// start; a record an older process still writes meanwhile stays on the call (get-call shows it
// either way) and the next release moves it.

/** The record paths a call kept on itself before they moved, by field. */
const CALL_RECORD_FIELDS = ['effects', 'crm_sync'] as const;

export interface EffectRecordsMove {
  /** Calls whose records moved. */
  calls: number;
  /** Records copied (those already in the records document are left as they are). */
  records: number;
}

/** `exclusive(firm, callId, write)`: runs `write` holding the call's lock. */
export type CallExclusive = <T>(firm: string, callId: string, write: () => Promise<T>) => Promise<T>;

export async function moveCallEffectRecords(db: Db, exclusive: CallExclusive): Promise<EffectRecordsMove> {
  const calls = db.collection<Document & { _id: string }>(COLLECTIONS.calls);
  const records = db.collection<Document & { _id: string }>(COLLECTIONS.callEffects);
  const projection = Object.fromEntries([['firm', 1], ...CALL_RECORD_FIELDS.map((f) => [f, 1])]);
  const cursor = calls.find(
    { $or: CALL_RECORD_FIELDS.map((f) => ({ [f]: { $exists: true } })) },
    { projection, batchSize: 200 },
  );
  const out: EffectRecordsMove = { calls: 0, records: 0 };
  for await (const seen of cursor) {
    const firm = typeof seen.firm === 'string' ? seen.firm : '';
    await exclusive(firm, seen._id, async () => {
      // Read again under the lock: what the call holds now.
      const call = await calls.findOne({ _id: seen._id }, { projection });
      if (call === null) return;
      const have = (await records.findOne({ _id: call._id })) ?? {};
      const set: Record<string, unknown> = {};
      const unset: Record<string, ''> = {};
      for (const field of CALL_RECORD_FIELDS) {
        const held = call[field] as Record<string, unknown> | undefined;
        if (held === undefined || held === null || typeof held !== 'object') {
          if (held !== undefined) unset[field] = '';
          continue;
        }
        const already = (have as Document)[field] as Record<string, unknown> | undefined;
        for (const [name, record] of Object.entries(held)) {
          if (already?.[name] === undefined) set[`${field}.${name}`] = record;
        }
        unset[field] = '';
      }
      if (Object.keys(set).length > 0) {
        await updateById(records, call._id, { $set: set });
        out.records += Object.keys(set).length;
      }
      await calls.updateOne({ _id: call._id }, { $unset: unset });
      out.calls += 1;
    });
  }
  return out;
}

/** release's step: moveCallEffectRecords, each call under the lock its workers take (withCallLock). */
export function releaseCallEffectRecords(
  db: Db,
  redis: RedisClient,
  config: { queuePrefix: string; redisCluster: boolean; callLockMs: number },
): Promise<EffectRecordsMove> {
  const keys = redisKeys(config);
  return moveCallEffectRecords(db, (firm, callId, write) =>
    withRecordLock(redis, keys.callLock(firm, callId), write, { ttlMs: config.callLockMs }),
  );
}
