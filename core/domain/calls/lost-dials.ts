import type { Services } from '../../wiring/services.js';
import type { RedisClient } from '../../platform/redis.js';
import { JOBS } from '../../../jobs/table.js';
import { enqueue } from '../../../jobs/define.js';
import { everyFirmSlug } from '../firms/firms.js';
import { callsCollection } from './calls.js';

// A lost dial: an outbound call whose record is in MongoDB, never dialled, with no place-call job
// left in Redis. Redis replicates asynchronously, so a failover can lose a job the web had added
// and answered 200 for (docs/redis.md#what-a-failover-can-lose); a web process that dies between
// the call's insert and its job's add leaves the same (its client got no answer). Left alone, such
// a call stays `registered` for ever. The sweep adds the call's place-call job again, marked
// `lost`, and the job decides on the call as it stands then (placeOutboundCall): a call its
// request would name again on a repeat (`repeatable`: a derived id, an Idempotency-Key) is placed,
// since a repeat cannot have made a second; any other call that never came to its dial is ended
// `error`/`dial_failed`, since its client, never answered, may have asked again and had another.

/** Ids asked of Redis in one go (one round trip of EXISTS, pipelined by ioredis). */
const CHUNK = 200;

/**
 * Adds a `lost` place-call job for every outbound call of every firm that is unfinished, has no
 * provider call, was created more than `olderThanMs` ago and has no job of its id in the calls
 * queue (in any state). Reads each firm's unfinished calls by the list-calls index's prefix
 * (`firm`, `finished`): a firm's calls in flight and waiting for their hours, not its history.
 */
export async function sweepLostDials(
  services: Services,
  olderThanMs: number,
): Promise<{ checked: number; readded: number }> {
  const calls = callsCollection(services.mongo.db);
  const queue = services.queues[JOBS.placeCall.queue];
  // The queue's own connection: its keys are where it keeps them (prefix, a cluster's slots).
  const redis = queue.opts.connection as RedisClient;
  const cutoff = new Date(Date.now() - olderThanMs);
  let checked = 0;
  let readded = 0;
  const named: string[] = [];
  const sweep = async (batch: Array<{ _id: string; firm: string }>): Promise<void> => {
    checked += batch.length;
    const present = await Promise.all(
      batch.map((c) => redis.exists(queue.toKey(JOBS.placeCall.id!({ callId: c._id, firm: c.firm })))),
    );
    for (const [i, call] of batch.entries()) {
      if (present[i] !== 0) continue;
      // An add while a job of that id exists (one added since) adds nothing.
      await enqueue(services.queues, JOBS.placeCall, { callId: call._id, firm: call.firm, lost: true });
      readded += 1;
      if (named.length < 20) named.push(call._id);
    }
  };
  for await (const firm of everyFirmSlug(services.mongo.db)) {
    const cursor = calls.find(
      {
        firm,
        finished: false,
        direction: 'outbound',
        provider_call_id: null,
        created_at: { $lt: cutoff },
      },
      { projection: { _id: 1, firm: 1 } },
    );
    let batch: Array<{ _id: string; firm: string }> = [];
    for await (const call of cursor) {
      batch.push({ _id: call._id, firm: call.firm });
      if (batch.length === CHUNK) {
        await sweep(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await sweep(batch);
  }
  if (readded > 0) services.log.warn({ calls: named, count: readded }, 'lost dials: place-call added again');
  return { checked, readded };
}
