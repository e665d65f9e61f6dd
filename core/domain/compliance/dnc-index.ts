import type { Services } from '../../wiring/services.js';
import { redisKeys, type RedisKeys } from '../../platform/redis-keys.js';
import type { RedisClient } from '../../platform/redis.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { dncCollection, findDncEntry, type DncEntry } from './dnc-store.js';
import {
  DAY_MS,
  askForAttemptsRebuild,
  attemptCountOf,
  peekAttempts,
  rebuildNumberAttempts,
  type AttemptCount,
} from './frequency.js';
import { askForRebuild } from './rebuild-asks.js';

// The firm's do-not-call list in Redis (a SET of its numbers beside the MongoDB key documents),
// so that the dial gate's request stage — create-outbound-call and each campaign call — can say
// "not listed" with one Redis round trip instead of a database read (docs/compliance.md#the-index).
// MongoDB stays the truth:
// - The set answers only "not listed", and only while its ready mark stands (an hour after a
//   rebuild streamed the whole list into it). A member is confirmed by the point read, and a
//   member the list no longer holds (taken off) is removed then.
// - Additions are written to MongoDB first, then to the set: the rebuild adds into the live set,
//   so an addition during a rebuild is never lost from it.
// - What Redis can lose (a failover, a restart without its data, an addition whose SADD failed
//   while Redis was down): the ready mark goes with the data, and the request stage reads MongoDB
//   until the next rebuild; an addition missed while the mark stood is in the set at the latest
//   after the mark expires (an hour). Meanwhile the request may be accepted, and the dial stage,
//   which always reads MongoDB, blocks the call before the provider is asked.

/** How long a rebuilt index is trusted before it is rebuilt again. */
export const DNC_INDEX_TTL_S = 3600;
const REBUILD_BATCH = 1000;

const PEEK = loadRedisScript(new URL('./request-peek.lua', import.meta.url), {
  keys: ['ready', 'listed', 'attempts', 'attempts_ready'],
  args: ['phone', 'window_start'],
});

/** What the request stage reads in Redis: the number's do-not-call entry and its attempts. */
export interface RequestPeek {
  dnc: DncEntry | null;
  seen: AttemptCount;
}

/**
 * request-peek.lua's answer: the index is ready (1|0), the number is in it (1|0), its attempts,
 * the firm's attempts are known to be complete (1|0).
 */
export type IndexPeek = [ready: number, member: number, attempts: string[], attemptsReady: number];

/**
 * The request stage's one Redis step (request-peek.lua), nothing else: whether the firm's index
 * is ready, whether the number is in it, and the number's attempts since `windowStart`.
 */
export function peekIndex(
  redis: RedisClient,
  keys: RedisKeys,
  firm: string,
  phone: string,
  windowStart: number,
): Promise<IndexPeek> {
  return PEEK.run(
    redis,
    {
      ready: keys.dncIndexReady(firm),
      listed: keys.dncListed(firm),
      attempts: keys.dialAttempts(firm, phone),
      attempts_ready: keys.dialAttemptsReady(firm),
    },
    { phone, window_start: windowStart },
  ) as Promise<IndexPeek>;
}

/**
 * The request stage's reads in one Redis step (request-peek.lua): the index's "not listed" when
 * it is ready, else (or for a number in the index) the MongoDB key document; and the number's
 * dial attempts in the rolling 24 h (frequency.ts). Asks for a rebuild when the index is not ready.
 */
export async function peekAtRequest(
  services: Services,
  firm: string,
  phone: string,
  callId: string,
  atMs: number,
): Promise<RequestPeek> {
  const keys = redisKeys(services.config);
  const [ready, member, rows, attemptsReady] = await peekIndex(
    services.redis,
    keys,
    firm,
    phone,
    atMs - DAY_MS,
  );
  // Attempts Redis may have lost (frequency.ts): the number's are rebuilt from its records first.
  const seen =
    attemptsReady === 1
      ? attemptCountOf(rows, callId)
      : await rebuiltAttempts(services, firm, phone, callId, atMs);
  if (ready === 1 && member === 0) return { dnc: null, seen };
  const dnc = await findDncEntry(services.mongo.db, firm, phone);
  if (dnc === null && member === 1 && ready === 1) {
    await services.redis.srem(keys.dncListed(firm), phone).catch(() => 0);
  }
  if (ready !== 1) requestRebuild(services, keys, firm);
  return { dnc, seen };
}

/** The number's attempts after its rebuild from its records; the firm's rebuild is asked for. */
async function rebuiltAttempts(
  services: Services,
  firm: string,
  phone: string,
  callId: string,
  atMs: number,
): Promise<AttemptCount> {
  await rebuildNumberAttempts(services, firm, phone, atMs);
  askForAttemptsRebuild(services, firm);
  return peekAttempts(services, firm, phone, callId, atMs);
}

function requestRebuild(services: Services, keys: RedisKeys, firm: string): void {
  askForRebuild(
    services,
    keys.dncIndexReady(firm),
    () => enqueue(services.queues, JOBS.rebuildDncIndex, { firm }),
    'the do-not-call index',
  );
}

/** After numbers were added to the list in MongoDB: into the index (best effort, see above). */
export async function indexListed(
  services: Services,
  firm: string,
  phones: readonly string[],
): Promise<void> {
  if (phones.length === 0) return;
  const set = redisKeys(services.config).dncListed(firm);
  try {
    for (let i = 0; i < phones.length; i += REBUILD_BATCH) {
      await services.redis.sadd(set, ...phones.slice(i, i + REBUILD_BATCH));
    }
  } catch (err) {
    services.log.warn(
      { err, firm },
      'do-not-call index not updated; the gate reads the database until its rebuild',
    );
  }
}

/**
 * Streams the firm's list into the index (one cursor over the firm's `_id` range) and marks it
 * ready for DNC_INDEX_TTL_S. Additions made meanwhile reach the set by their own SADD.
 */
export async function rebuildDncIndex(services: Services, firm: string): Promise<{ numbers: number }> {
  const keys = redisKeys(services.config);
  const cursor = dncCollection(services.mongo.db)
    .find({ _id: { $gt: `${firm}:`, $lt: `${firm};` } }, { projection: { phone: 1 } })
    .sort({ _id: 1 })
    .batchSize(REBUILD_BATCH);
  let batch: string[] = [];
  let numbers = 0;
  for await (const entry of cursor) {
    batch.push(entry.phone);
    numbers += 1;
    if (batch.length === REBUILD_BATCH) {
      await services.redis.sadd(keys.dncListed(firm), ...batch);
      batch = [];
    }
  }
  if (batch.length > 0) await services.redis.sadd(keys.dncListed(firm), ...batch);
  await services.redis.set(keys.dncIndexReady(firm), new Date().toISOString(), 'EX', DNC_INDEX_TTL_S);
  return { numbers };
}
