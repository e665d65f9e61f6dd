import type { ChainableCommander } from 'ioredis';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { RecordBusyError, withRecordLock } from '../../platform/redis-mutex.js';
import { callsCollection, shownCallId, type CallDoc } from './calls.js';

// list-calls' index: per firm, one Redis sorted set whose members, all scored 0, are
// `<end_timestamp, 15 digits>|<call_id>`, the call_id the API shows (shownCallId: the provider's
// id for an inbound call, whose _id is a hash; calls-list.ts reads it back by either). Redis
// orders equal scores by member bytes, so the set is in list-calls order (end_timestamp, then
// call_id, both as MongoDB compares them) and a page after a keyset position is one
// ZREVRANGEBYLEX: O(log n + page), whatever the firm's size.
// FerretDB 1.24 cannot serve that from MongoDB: it pushes down only equality filters, never a
// range, a sort (but $natural) or a limit with a filter, so any query for a page reads every
// call of the firm (docs/operations.md#data-access-on-ferretdb-and-mongodb).
//
// MongoDB stays the record: the set is derived from it. The job that finishes a call adds the
// call's member after the call's write (onCallFinished, which runs again on every retried or
// repeated event), and the set is rebuilt from the firm's finished calls when its ready mark
// `~` is missing — a firm whose calls ended before this index existed, a Redis that lost it,
// a set expired after 14 days unused. Members are only ever added (a finished call's
// end_timestamp never changes), so adds during a rebuild and a rebuild run twice are harmless.

const TS_DIGITS = 15;
/** Sorts after every member (they start with a digit): present once the set is complete. */
const READY = '~';
const IDLE_TTL_MS = 14 * 24 * 3600 * 1000;
const REBUILD_BATCH = 1000;

export interface ListPosition {
  /** end_timestamp, ms */
  t: number;
  /** call_id, as the API shows it (shownCallId) */
  i: string;
}

/** A position fits a member: a whole non-negative end_timestamp of at most 15 digits. */
export const isListPosition = (p: { t: unknown; i: unknown }): p is ListPosition =>
  typeof p.t === 'number' &&
  Number.isSafeInteger(p.t) &&
  p.t >= 0 &&
  p.t < 10 ** TS_DIGITS &&
  typeof p.i === 'string';

export const listMember = (p: ListPosition): string => `${String(p.t).padStart(TS_DIGITS, '0')}|${p.i}`;

const positionOf = (member: string): ListPosition => ({
  t: Number(member.slice(0, TS_DIGITS)),
  i: member.slice(TS_DIGITS + 1),
});

/** A finished call's place in its firm's list (a finished call always has an end time). */
const positionOfCall = (call: Pick<CallDoc, '_id' | 'call_id' | 'end_timestamp'>): ListPosition => ({
  t: Math.max(0, Math.floor(call.end_timestamp ?? 0)),
  i: shownCallId(call),
});

/** Runs a MULTI; throws its first failed command's error (exec() itself only reports them). */
async function exec(multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec();
  if (replies === null) throw new Error('call-list: the transaction was aborted');
  for (const [err] of replies) if (err) throw err;
  return replies.map(([, reply]) => reply);
}

const keyOf = (services: Services, firm: string) => redisKeys(services.config).callList(firm);

/** Adds a finished call to its firm's list; idempotent, so a retried job simply adds it again. */
export async function recordFinishedCall(
  services: Services,
  call: Pick<CallDoc, '_id' | 'call_id' | 'firm' | 'end_timestamp' | 'finished'>,
): Promise<void> {
  if (!call.finished) return;
  const key = keyOf(services, call.firm);
  await exec(
    services.redis
      .multi()
      .zadd(key, 0, listMember(positionOfCall(call)))
      .pexpire(key, IDLE_TTL_MS),
  );
}

/**
 * A finished call's place, made sure of by a reader that shows the call finished (get-call). The
 * job that ends a call adds the place a moment after the call's write (after its opt-out check,
 * under load a second or more), so a client that saw the call ended there and listed at once did
 * not find it. Best effort: with Redis not ready, or failing, the job's own add stays the one.
 */
export async function ensureListed(
  services: Services,
  call: Pick<CallDoc, '_id' | 'call_id' | 'firm' | 'end_timestamp' | 'finished'>,
): Promise<void> {
  if (!call.finished || services.redis.status !== 'ready') return;
  try {
    await recordFinishedCall(services, call);
  } catch (err) {
    services.log.warn(
      { err, firm: call.firm, call_id: call._id },
      "could not make sure of a finished call's list place",
    );
  }
}

/**
 * Up to `count` positions after `after` (the first page when null), newest first; null when
 * the firm's set is not complete (then rebuildCallList).
 */
export async function readCallList(
  services: Services,
  firm: string,
  after: ListPosition | null,
  count: number,
): Promise<ListPosition[] | null> {
  const key = keyOf(services, firm);
  const max = after === null ? `(${READY}` : `(${listMember(after)}`;
  const [ready, members] = await exec(
    services.redis
      .multi()
      .zscore(key, READY)
      .zrevrangebylex(key, max, '-', 'LIMIT', 0, count)
      .pexpire(key, IDLE_TTL_MS),
  );
  if (ready === null) return null;
  return (members as string[]).map(positionOf);
}

/**
 * Makes the firm's set complete from MongoDB: one streaming read of the firm's finished calls
 * (their end times only), added in batches, then the ready mark. One process at a time per firm:
 * false at once when another is at it (the caller then reads MongoDB for this page).
 */
export async function rebuildCallList(services: Services, firm: string): Promise<boolean> {
  const key = keyOf(services, firm);
  const lock = redisKeys(services.config).callListBuildLock(firm);
  try {
    await withRecordLock(
      services.redis,
      lock,
      async () => {
        if ((await services.redis.zscore(key, READY)) !== null) return;
        const cursor = callsCollection(services.mongo.db).find(
          { firm, finished: true },
          { projection: { _id: 1, call_id: 1, end_timestamp: 1 } },
        );
        let batch: string[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const args = batch.flatMap((m) => [0, m]);
          await exec(
            services.redis
              .multi()
              .zadd(key, ...args)
              .pexpire(key, IDLE_TTL_MS),
          );
          batch = [];
        };
        for await (const call of cursor) {
          batch.push(listMember(positionOfCall(call)));
          if (batch.length >= REBUILD_BATCH) await flush();
        }
        await flush();
        await exec(services.redis.multi().zadd(key, 0, READY).pexpire(key, IDLE_TTL_MS));
      },
      { ttlMs: 30_000, renew: true, waitMs: 0 },
    );
  } catch (err) {
    if (err instanceof RecordBusyError) return false;
    throw err;
  }
  return true;
}
