// What the soak's Redis holds, key by key (SCAN, then PTTL and MEMORY USAGE pipelined: a few
// thousand keys), in four classes, so that each is judged by the rule that bounds it:
//   - scheduled: keys that expire by themselves (a TTL: booking records, campaign counters,
//     rate-limit windows, the call-list index) and the records of delayed jobs;
//   - retained: what BullMQ keeps of finished jobs (their records and logs, the completed and
//     failed sets, the event stream), bounded per queue by count (jobs/queues.ts);
//   - in flight: what comes and goes with the work in progress: the records of jobs waiting or
//     running, a queue's lists, delayed set and markers that exist only while it has such jobs,
//     a firm's dial slots while it has calls up, a campaign's lead hashes and counts until it
//     ends (then they expire: scheduled), parked campaign jobs, contacts imports waiting for
//     their turn;
//   - other: everything else, which must not grow at all.
import type { Redis } from 'ioredis';
import { JOBS } from '../../jobs/table.js';
import {
  DEFAULT_JOB_OPTIONS,
  EVENTS_STREAM_MAX_LEN,
  QUEUE_NAMES,
  type QueueName,
} from '../../jobs/queues.js';

const MB = 1024 * 1024;

export interface RedisClasses {
  keys: Record<'scheduled' | 'retained' | 'inFlight' | 'other', number>;
  mb: Record<'scheduled' | 'retained' | 'inFlight' | 'other', number>;
  /** Per queue: completed and failed jobs kept, and the event stream's length. */
  queues: Record<string, { completed: number; failed: number; events: number }>;
}

const countOf = (keep: unknown, fallback: number): number =>
  typeof keep === 'object' && keep !== null && typeof (keep as { count?: unknown }).count === 'number'
    ? (keep as { count: number }).count
    : fallback;

/**
 * The most finished jobs BullMQ keeps in `queue`: each completion trims the set to its own job's
 * bound, so the queue's bound is the largest of its jobs'.
 */
export function retentionBound(queue: QueueName): { completed: number; failed: number } {
  const defaults = {
    completed: countOf(DEFAULT_JOB_OPTIONS.removeOnComplete, Infinity),
    failed: countOf(DEFAULT_JOB_OPTIONS.removeOnFail, Infinity),
  };
  const bound = { completed: 0, failed: 0 };
  let any = false;
  for (const job of Object.values(JOBS)) {
    if (job.queue !== queue) continue;
    any = true;
    bound.completed = Math.max(bound.completed, countOf(job.options?.removeOnComplete, defaults.completed));
    bound.failed = Math.max(bound.failed, countOf(job.options?.removeOnFail, defaults.failed));
  }
  return any ? bound : defaults;
}

/** XTRIM MAXLEN ~ trims whole stream nodes (100 entries by default): the stream may hold a node more. */
export const EVENTS_STREAM_BOUND = EVENTS_STREAM_MAX_LEN + 100;

/**
 * `kept`, when given, receives every kept key (retained and other: what is neither scheduled nor
 * in flight) with its MEMORY USAGE in bytes, to diff two points of a soak key by key.
 */
export async function classifyRedis(
  redis: Redis,
  prefix: string,
  kept?: Map<string, number>,
  /** Runs between the first reading of the queues' sets and the key pass (tests). */
  between?: () => Promise<void>,
): Promise<RedisClasses> {
  const finished = new Set<string>();
  const delayed = new Set<string>();
  // Jobs waiting or running, by their ids: a job scheduler's job has an id of its own shape
  // (`repeat:<scheduler>:<time>`), which the pattern of plain ids below does not take.
  const underWay = new Set<string>();
  const queues: RedisClasses['queues'] = {};
  // The queues' sets are read on both sides of the key pass, and a key's job is placed by either
  // reading: a job that finished (or was delayed) between the first reading and its key's look
  // would otherwise be taken for one under way, and a burst of completions then showed as a dip in
  // the retained keys (the hour of c8ba664: 646 and 655 of 686 at two samples, the finished jobs
  // kept at 630 throughout).
  const readSets = async (): Promise<void> => {
    for (const queue of QUEUE_NAMES) {
      const base = `${prefix}:${queue}`;
      const [completed, failed, later, events, active, waiting, paused, prioritized] = await Promise.all([
        redis.zrange(`${base}:completed`, '0', '-1'),
        redis.zrange(`${base}:failed`, '0', '-1'),
        redis.zrange(`${base}:delayed`, '0', '-1'),
        redis.xlen(`${base}:events`),
        redis.lrange(`${base}:active`, '0', '-1'),
        redis.lrange(`${base}:wait`, '0', '-1'),
        redis.lrange(`${base}:paused`, '0', '-1'),
        redis.zrange(`${base}:prioritized`, '0', '-1'),
      ]);
      for (const id of [...completed, ...failed]) finished.add(`${base}:${id}`);
      for (const id of later) delayed.add(`${base}:${id}`);
      for (const id of [...active, ...waiting, ...paused, ...prioritized]) underWay.add(`${base}:${id}`);
      // The counts as first read: what the queue kept when the sample began.
      queues[queue] ??= { completed: completed.length, failed: failed.length, events };
    }
  };
  await readSets();
  await between?.();
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const looked: { key: string; ttl: number; bytes: number }[] = [];
  for (let i = 0; i < keys.length; i += 500) {
    const batch = keys.slice(i, i + 500);
    const pipeline = redis.pipeline();
    for (const key of batch) pipeline.pttl(key).memory('USAGE', key, 'SAMPLES', '0');
    const replies = (await pipeline.exec()) ?? [];
    batch.forEach((key, n) => {
      const ttl = Number(replies[2 * n]?.[1]);
      const bytes = Number(replies[2 * n + 1]?.[1]) || 0;
      if (ttl !== -2) looked.push({ key, ttl, bytes }); // -2: gone since the SCAN
    });
  }
  await readSets();
  const out: RedisClasses = {
    keys: { scheduled: 0, retained: 0, inFlight: 0, other: 0 },
    mb: { scheduled: 0, retained: 0, inFlight: 0, other: 0 },
    queues,
  };
  const queueOf = (key: string) => QUEUE_NAMES.find((q) => key.startsWith(`${prefix}:${q}:`));
  for (const { key, ttl, bytes } of looked) {
    const record = key.replace(/:logs$/, '');
    const queue = queueOf(key);
    const rest = queue === undefined ? '' : key.slice(`${prefix}:${queue}:`.length);
    const inProgress = IN_PROGRESS_PREFIXES.some((p) => key.startsWith(`${prefix}:${p}`));
    const cls =
      ttl > 0 || delayed.has(record)
        ? 'scheduled'
        : finished.has(record) || rest === 'completed' || rest === 'failed' || rest === 'events'
          ? 'retained'
          : inProgress ||
              underWay.has(record) ||
              (queue !== undefined &&
                (IN_PROGRESS.has(rest) || (/^[^:]+(:logs)?$/.test(rest) && !STRUCTURE.has(rest))))
            ? 'inFlight'
            : 'other';
    out.keys[cls] += 1;
    out.mb[cls] += bytes / MB;
    if (kept !== undefined && (cls === 'retained' || cls === 'other')) kept.set(key, bytes);
  }
  return out;
}

/** Our keys (core/platform/redis-keys.ts) that exist only while their work is in progress. */
const IN_PROGRESS_PREFIXES = ['pacing', 'campaign:', 'contacts-import:pending:'];

/**
 * A queue's keys that exist only while it has jobs waiting, running, limited or delayed: the
 * delayed set goes with its queue's last delayed job (a simulator's step, a parked job), as the
 * wait list goes with its last waiting one.
 */
const IN_PROGRESS = new Set([
  'wait',
  'delayed',
  'active',
  'prioritized',
  'paused',
  'marker',
  'stalled',
  'limiter',
  'pc',
]);

/** A queue's own keys (BullMQ's lists, sets and hashes), never a job's record. */
const STRUCTURE = new Set([
  'id',
  'meta',
  'wait',
  'paused',
  'active',
  'prioritized',
  'delayed',
  'stalled',
  'stalled-check',
  'marker',
  'pc',
  'limiter',
  'repeat',
  'events',
  'completed',
  'failed',
]);
