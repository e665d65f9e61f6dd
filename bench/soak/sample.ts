// One soak sample: the web's /metrics (prom-client's process and Node metrics, the queue gauges),
// the probe files of the web and worker (heap after a full collection, event-loop delay p99),
// Redis INFO memory and DBSIZE, and MongoDB's collStats size of every collection.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { loadavg } from 'node:os';
import { rssMiB } from '../lib/measure.js';
import { rssParts } from './rss-parts.js';
import type { QueueName } from '../../jobs/queues.js';
import { classifyRedis, EVENTS_STREAM_BOUND, retentionBound } from './redis-classes.js';

export type Sample = Record<string, number>;

/** Redis MEMORY STATS: what used_memory holds besides the values of the keys. */
export interface RedisOverhead {
  /** Every normal client's query and reply buffers (they follow the traffic of the moment). */
  clients: number;
  /** The key space's main hash table: an entry and a bucket per key (all classes). */
  mainTable: number;
  /** The expiry table: an entry per key with a TTL (scheduled keys, by the soak's classes). */
  expiresTable: number;
}

/** MEMORY STATS as numbers, the db.0 section flattened (`db.0.overhead.hashtable.main`). */
export async function memoryStats(redis: Redis): Promise<RedisOverhead> {
  const flat = (await redis.call('MEMORY', 'STATS')) as unknown[];
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = String(flat[i]);
    const value = flat[i + 1];
    if (Array.isArray(value)) {
      for (let j = 0; j + 1 < value.length; j += 2) out[`${name}.${String(value[j])}`] = Number(value[j + 1]);
    } else out[name] = Number(value);
  }
  return {
    clients: out['clients.normal'] ?? 0,
    mainTable: out['db.0.overhead.hashtable.main'] ?? 0,
    expiresTable: out['db.0.overhead.hashtable.expires'] ?? 0,
  };
}

/**
 * What Redis keeps, in bytes: used_memory without the keys that expire by themselves or follow
 * the work in progress (their MEMORY USAGE), without the client buffers (their size is the
 * traffic of the sampled instant; the number of clients is judged on its own), and without the
 * key space's hash tables but for the kept keys' share of the main one: the expiry table holds
 * only keys with a TTL, and the main table grows with every key, so both would otherwise count
 * the scheduled keys' growth (booking records kept for 30 days) as kept memory.
 */
export function keptBytes(
  used: number,
  o: RedisOverhead,
  keys: { all: number; kept: number },
  notKeptBytes: number,
): number {
  const keptShareOfMain = keys.all > 0 ? o.mainTable * (keys.kept / keys.all) : 0;
  return used - notKeptBytes - o.clients - o.expiresTable - (o.mainTable - keptShareOfMain);
}

const MB = 1024 * 1024;

/** How far used_memory may move over a classifying pass for its figures to hold together. */
export const QUIET_PASS_BYTES = 100 * 1024;

/**
 * A pass over Redis whose figures are put together with used_memory (what Redis keeps is
 * used_memory less what the pass found scheduled or in flight) is only consistent with it if
 * nothing much came or went meanwhile: a campaign launched during the pass adds hundreds of job
 * records that the pass counts in flight while used_memory, read before, never held them (the
 * short soak of 2026-12-06 showed the kept memory 8 % low at one such sample). So used_memory is
 * read on both sides of the pass, and the pass taken again, at most `tries` times, while it moved
 * by more than `quietBytes`; the pass that moved least is kept, with the mean of its two reads.
 */
export async function quietPass<T>(
  readUsed: () => Promise<number>,
  pass: () => Promise<T>,
  quietBytes = QUIET_PASS_BYTES,
  tries = 3,
): Promise<{ result: T; used: number; moved: number; passes: number }> {
  let best: { result: T; used: number; moved: number } | undefined;
  let passes = 0;
  while (passes < tries) {
    passes += 1;
    const before = await readUsed();
    const result = await pass();
    const after = await readUsed();
    const moved = Math.abs(after - before);
    if (best === undefined || moved < best.moved) best = { result, used: (before + after) / 2, moved };
    if (moved <= quietBytes) break;
  }
  return { ...best!, passes };
}

/** Prometheus text: the sum of a metric's values whose labels include every `labels` pair. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (!Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) continue;
    sum += Number(m[3]);
    found = true;
  }
  return found ? sum : NaN;
}

interface Probe {
  rss: number;
  heapUsed: number;
  heapTotal?: number;
  external?: number;
  arrayBuffers?: number;
  spaces?: Record<string, number>;
  lagP99Ms: number;
}

function probe(dir: string, pid: number): Probe | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')) as Probe;
  } catch {
    return undefined;
  }
}

export interface Sources {
  webBase: string;
  webPid: number;
  workerPid: number;
  probeDir: string;
  redis: Redis;
  /** The app's key prefix (QUEUE_PREFIX). */
  prefix: string;
  db: Db;
  /** SOAK_REDIS_KEYS=1: every sample's kept keys and their bytes go to <probeDir>/redis-kept-<n>.json. */
  keptKeysDump?: boolean;
}

/** Keys matching `pattern` (SCAN: the soak's Redis holds a few thousand keys). */
async function countKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

/** `<name>_rss_code_mb`, `_rss_v8_mb`, `_rss_malloc_mb`: the process's RSS by part. */
function rssColumns(name: string, pid: number): Sample {
  const parts = rssParts(pid);
  return {
    [`${name}_rss_code_mb`]: parts.code,
    [`${name}_rss_v8_mb`]: parts.v8,
    [`${name}_rss_malloc_mb`]: parts.malloc,
  };
}

let sampleNo = 0;

export async function takeSample(s: Sources, t: number): Promise<Sample> {
  sampleNo += 1;
  const metrics = await (await fetch(`${s.webBase}/metrics`)).text();
  const web = probe(s.probeDir, s.webPid);
  const worker = probe(s.probeDir, s.workerPid);
  const info = await s.redis.info('memory');
  const used = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
  const keys = await s.redis.dbsize();
  // What used_memory holds besides the keys' own MEMORY USAGE: clients' buffers (they follow
  // the load of the moment), the Lua script cache and the key space's hash tables.
  const infoField = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
  const jobs = (state: string) => metricSum(metrics, 'bullmq_queue_jobs', { state });
  const out: Sample = {
    t,
    minutes: t / 60,
    load1: loadavg()[0]!,
    web_rss_mb: metricSum(metrics, 'process_resident_memory_bytes') / MB,
    web_heap_mb: metricSum(metrics, 'nodejs_heap_size_used_bytes') / MB,
    web_heap_after_gc_mb: (web?.heapUsed ?? NaN) / MB,
    web_lag_p99_ms: metricSum(metrics, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    worker_rss_mb: rssMiB(s.workerPid),
    worker_heap_after_gc_mb: (worker?.heapUsed ?? NaN) / MB,
    worker_lag_p99_ms: worker?.lagP99Ms ?? NaN,
    web_heap_total_mb: (web?.heapTotal ?? NaN) / MB,
    web_external_mb: (web?.external ?? NaN) / MB,
    worker_heap_total_mb: (worker?.heapTotal ?? NaN) / MB,
    worker_external_mb: (worker?.external ?? NaN) / MB,
    worker_array_buffers_mb: (worker?.arrayBuffers ?? NaN) / MB,
    // RSS that is neither V8's committed heap nor external memory: the allocator's own arenas,
    // native code and stacks.
    worker_native_mb: ((worker?.rss ?? NaN) - (worker?.heapTotal ?? NaN) - (worker?.external ?? NaN)) / MB,
    worker_new_space_mb: (worker?.spaces?.new_space ?? NaN) / MB,
    worker_old_space_mb: (worker?.spaces?.old_space ?? NaN) / MB,
    // Each process's RSS by what holds it (bench/soak/rss-parts.ts): V8's code range, its heap's
    // pages, glibc's arenas and large allocations.
    ...rssColumns('web', s.webPid),
    ...rssColumns('worker', s.workerPid),
    redis_used_mb: used / MB,
    redis_keys: keys,
    redis_clients_mb: infoField('mem_clients_normal') / MB,
    redis_clients: Number(/connected_clients:(\d+)/.exec(await s.redis.info('clients'))?.[1] ?? NaN),
    redis_scripts_mb: infoField('used_memory_scripts') / MB,
    redis_overhead_mb: infoField('used_memory_overhead') / MB,
    jobs_scheduled: jobs('delayed'),
    // Job records kept after they finished: bounded by count per queue (jobs/queues.ts).
    jobs_retained: jobs('completed') + jobs('failed'),
    // Booking records (with their reminders), kept until 30 days after the booking ends.
    redis_booking_records: await countKeys(s.redis, `${s.prefix}:reminders:*`),
    jobs_waiting: jobs('waiting') + jobs('prioritized'),
    jobs_active: jobs('active'),
    jobs_failed: jobs('failed'),
    jobs_completed: metricSum(metrics, 'bullmq_jobs_finished_total', { outcome: 'completed' }),
  };
  // Keys and memory by what bounds them (bench/soak/redis-classes.ts): what expires by itself
  // or waits for its time is scheduled; finished jobs are bounded per queue by count; the rest
  // must stay flat.
  // Taken with used_memory read on both sides (quietPass), since what Redis keeps is worked out
  // from both.
  const pass = await quietPass(
    async () => Number(/used_memory:(\d+)/.exec(await s.redis.info('memory'))?.[1] ?? NaN),
    async () => {
      const kept = s.keptKeysDump === true ? new Map<string, number>() : undefined;
      const classes = await classifyRedis(s.redis, s.prefix, kept);
      return { classes, kept, overhead: await memoryStats(s.redis) };
    },
  );
  const { classes, kept, overhead } = pass.result;
  if (kept !== undefined) {
    writeFileSync(
      join(s.probeDir, `redis-kept-${sampleNo}.json`),
      JSON.stringify({ t, usedMb: pass.used / MB, keys: Object.fromEntries(kept) }),
    );
  }
  // What Redis keeps: all but what is scheduled and what is in flight (which follows the load),
  // counted in the one pass that classified the keys. Not DBSIZE less those classes: DBSIZE is
  // read before the pass, and keys made or gone in between (a campaign launched at that moment)
  // would move the difference by dozens of keys while the kept keys stay where they are.
  out.redis_keys_kept = classes.keys.retained + classes.keys.other;
  out.redis_keys_other = classes.keys.other;
  out.redis_used_kept_mb =
    keptBytes(
      pass.used,
      overhead,
      { all: keys, kept: out.redis_keys_kept },
      (classes.mb.scheduled + classes.mb.inFlight) * MB,
    ) / MB;
  // How many passes it took to find used_memory still (1 but when something came or went).
  out.redis_passes = pass.passes;
  out.redis_key_tables_mb = (overhead.mainTable + overhead.expiresTable) / MB;
  out.redis_in_flight_mb = classes.mb.inFlight;
  out.redis_scheduled_mb = classes.mb.scheduled;
  out.redis_retained_mb = classes.mb.retained;
  out.redis_other_mb = classes.mb.other;
  out.redis_keys_retained = classes.keys.retained;
  // The worst of every queue's finished jobs and event stream against its bound (≤ 1 is within).
  out.retention_vs_bound = Math.max(
    ...Object.entries(classes.queues).map(([queue, q]) => {
      const bound = retentionBound(queue as QueueName);
      return Math.max(q.completed / bound.completed, q.failed / bound.failed, q.events / EVENTS_STREAM_BOUND);
    }),
  );
  let total = 0;
  const names = (await s.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  for (const name of names) {
    const stats = await s.db.command({ collStats: name }).catch(() => ({ size: NaN }));
    const size = Number(stats.size);
    out[`mongo_${name}_kb`] = size / 1024;
    if (Number.isFinite(size)) total += size;
  }
  out.mongo_total_mb = total / MB;
  return out;
}
