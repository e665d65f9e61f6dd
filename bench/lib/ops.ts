// Which database and Redis operations one request really issues, counted from outside the
// process that issues them: MongoDB commands from the server's own counters (serverStatus
// metrics.commands, which FerretDB and MongoDB both keep), Redis commands from MONITOR. Used to
// check that a "direct" baseline issues exactly what the route issues.
import type { Document } from 'mongodb';
import { MongoClient } from 'mongodb';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';

/** Commands every client sends on its own (handshakes, heartbeats, sessions), not counted. */
const MONGO_BACKGROUND = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'ping',
  'buildInfo',
  'endSessions',
  'serverStatus',
  'saslStart',
  'saslContinue',
  'getParameter',
  'unknown',
]);
const REDIS_BACKGROUND = new Set(['info', 'ping', 'client', 'monitor', 'select', 'hello', 'config']);

export type OpCounts = Record<string, number>;

/** MongoDB commands the server has served so far, by name, the drivers' own left out. */
export async function mongoCounters(admin: MongoClient): Promise<OpCounts> {
  const status: Document = await admin.db('admin').command({ serverStatus: 1 });
  const commands = (status.metrics as Document | undefined)?.commands as Document | undefined;
  const out: OpCounts = {};
  for (const [name, v] of Object.entries(commands ?? {})) {
    if (MONGO_BACKGROUND.has(name)) continue;
    const total = Number((v as Document).total ?? 0);
    if (Number.isFinite(total)) out[name] = total;
  }
  return out;
}

const minus = (a: OpCounts, b: OpCounts): OpCounts =>
  Object.fromEntries(Object.keys({ ...a, ...b }).map((k) => [k, (a[k] ?? 0) - (b[k] ?? 0)]));

/** A readable name for a Redis command: EVALSHA named after the keys it touches. */
function redisName(args: string[]): string {
  const cmd = (args[0] ?? '').toUpperCase();
  if (cmd !== 'EVALSHA' && cmd !== 'EVAL') return cmd;
  const keys = args.slice(3).join(' ');
  const what = keys.includes(':rate:')
    ? 'rate limit + change epoch'
    : /:(wait|paused|meta|id)\b/.test(keys)
      ? 'BullMQ add job'
      : `script ${(args[1] ?? '').slice(0, 8)}`;
  return `${cmd} (${what})`;
}

/**
 * Runs `op(i)` `n` times, one after another, and returns the MongoDB commands and Redis
 * commands (top level: not the ones a Lua script runs) per call, by name.
 */
export async function opsPerCall(
  redisUrl: string,
  mongodbUri: string,
  n: number,
  op: (i: number) => Promise<unknown>,
): Promise<{ mongo: OpCounts; redis: OpCounts }> {
  const admin = new MongoClient(mongodbUri, { serverSelectionTimeoutMS: 5000 });
  // Never connected itself: `monitor()` opens a connection of its own, and this one's ready check
  // (INFO), run just after MONITOR, could arrive in the same read as MONITOR's OK, before ioredis
  // takes the connection as monitoring: "Command queue state error" (taskforcesh/bullmq#2505).
  const monitorClient = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  const monitor = await monitorClient.monitor();
  const seen: string[] = [];
  let on = false;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (!on || source.startsWith('lua')) return;
    if (REDIS_BACKGROUND.has((args[0] ?? '').toLowerCase())) return;
    seen.push(redisName(args));
  });
  try {
    await sleep(100);
    const s0 = await mongoCounters(admin);
    const s1 = await mongoCounters(admin);
    on = true;
    for (let i = 0; i < n; i++) await op(i);
    await sleep(200);
    on = false;
    const s2 = await mongoCounters(admin);
    // (s2 − s1) − (s1 − s0): what the ops did, less what reading the counters costs.
    const mongoDelta = minus(minus(s2, s1), minus(s1, s0));
    const mongo: OpCounts = {};
    for (const [k, v] of Object.entries(mongoDelta)) if (v > 0) mongo[k] = v / n;
    const redis: OpCounts = {};
    for (const name of seen) redis[name] = (redis[name] ?? 0) + 1 / n;
    return { mongo, redis };
  } finally {
    monitor.disconnect();
    monitorClient.disconnect();
    await admin.close();
  }
}

export const formatOps = (ops: { mongo: OpCounts; redis: OpCounts }): string =>
  [
    ...Object.entries(ops.mongo).map(([k, v]) => `MongoDB ${k} ×${+v.toFixed(2)}`),
    ...Object.entries(ops.redis).map(([k, v]) => `Redis ${k} ×${+v.toFixed(2)}`),
  ].join(', ') || 'nothing';

/** Whether two op profiles issue the same commands the same number of times (rounded). */
export function sameOps(
  a: { mongo: OpCounts; redis: OpCounts },
  b: { mongo: OpCounts; redis: OpCounts },
): boolean {
  const norm = (o: OpCounts) =>
    JSON.stringify(
      Object.entries(o)
        .map(([k, v]) => [k, Math.round(v)] as const)
        .filter(([, v]) => v > 0)
        .sort(),
    );
  return norm(a.mongo) === norm(b.mongo) && norm(a.redis) === norm(b.redis);
}
