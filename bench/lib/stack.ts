// The stack a bench runs against: Redis and MongoDB (REDIS_URL / MONGODB_URI, else the local
// Redis and FerretDB on PostgreSQL that `npm test` starts; with `redis: 'cluster'` a local Redis
// Cluster of three masters, as `npm run chaos -- --redis=cluster` starts, or the cluster REDIS_URL
// names, and every process runs with REDIS_CLUSTER=true), and per scenario an "app": its own
// database and queue prefix, the web and worker processes as children started the way
// `npm start` starts them (node --import tsx api/server.ts | workers/main.ts), a producer-side
// view of its queues and database for baselines, and everything removed at the end.
import { type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { RedisClient } from '../../core/platform/redis.js';
import { MongoClient, type Db } from 'mongodb';
import { createQueues, QUEUE, type QueueName, type Queues } from '../../jobs/queues.js';
import { createRedis } from '../../core/platform/redis.js';
import { redisKeys, type RedisKeys } from '../../core/platform/redis-keys.js';
import { readyMasters } from '../../core/platform/redis-cluster.js';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import {
  ensurePostgres,
  ensureRedisServer,
  freePort,
  startLocalServices,
  type LocalServices,
} from '../../scripts/local/services.js';
import { startRedisCluster } from '../../scripts/local/redis-cluster.js';
import { FERRETDB_GOGC } from '../../scripts/local/ferretdb.js';
import { launch } from '../../scripts/local/launcher.js';
import { procfileLaunch } from '../../scripts/local/procfile.js';
import { interruption, rssMiB, say } from './measure.js';
import { setTimeout as sleep } from 'node:timers/promises';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PROFILE_DIR = join(root, 'bench', 'results', 'profiles');
const run = promisify(execFile);
export const rand = (n = 4): string => randomBytes(n).toString('hex');

// ---- cleanup, whatever way the run ends ---------------------------------------------------

const cleanups: Array<() => Promise<unknown>> = [];
let cleaning: Promise<void> | undefined;
/** Registers a step for the end of the run (they run last to first). */
export const atExit = (step: () => Promise<unknown>): void => void cleanups.push(step);
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    // Each step is bounded, so a database busy with a slow query cannot keep the servers running.
    for (const step of cleanups.splice(0).reverse()) {
      await Promise.race([step().catch(() => {}), sleep(30_000, undefined, { ref: false })]);
    }
  })();
  return cleaning;
}

/**
 * The Procfile line of `type` (its variables and node flags), with the extra node flags of the
 * knob `flagsVariable` after its own (a flag given twice, the later wins).
 */
export function declared(
  type: 'web' | 'worker',
  flagsVariable: string,
): { env: Record<string, string>; nodeArgs: string[] } {
  const line = procfileLaunch(type);
  const extra = (process.env[flagsVariable] ?? '').split(' ').filter(Boolean);
  return { env: line.env, nodeArgs: [...line.nodeArgs, ...extra] };
}

/** Runs a bench script's `main`: a failure is printed and exits 1; the cleanup runs either way. */
export function runScript(main: () => Promise<void>): void {
  main()
    .catch((err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    })
    .finally(() => cleanup());
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interruption.interrupted = true;
    void cleanup().finally(() => process.exit(130));
  });
}

/** Gives up after `ms`: the work in progress stops at its next step, everything is removed, exit 2. */
export function deadline(ms: number): void {
  setTimeout(() => {
    say(`gave up after ${Math.round(ms / 1000)} s`);
    interruption.interrupted = true;
    void cleanup().finally(() => process.exit(2));
  }, ms).unref();
}

// ---- the data stores ----------------------------------------------------------------------

/** One redis-server, or a Redis Cluster (the service then runs with REDIS_CLUSTER=true). */
export type RedisMode = 'single' | 'cluster';

export interface Stores {
  redisUrl: string;
  /** REDIS_CLUSTER for every process and connection over these stores. */
  redisCluster: boolean;
  mongodbUri: string;
  local: LocalServices;
  /** What the stores are, for the report (versions). */
  describe(): Promise<Record<string, string>>;
}

/**
 * The stores: with `redis: 'cluster'`, REDIS_URL names one node of a Redis Cluster, else a local
 * one of three masters is started (scripts/local/redis-cluster.ts, as the chaos run's).
 */
export async function startStores(options: { redis?: RedisMode } = {}): Promise<Stores> {
  const onCluster = options.redis === 'cluster';
  let redisUrl = process.env.REDIS_URL;
  let clusterNodes: number | undefined;
  if (onCluster && redisUrl === undefined) {
    const dir = await mkdtemp(join(tmpdir(), 'bench-redis-cluster-'));
    say('starting a local Redis Cluster of three masters ...');
    const cluster = await startRedisCluster(await ensureRedisServer(say), dir);
    atExit(async () => {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    });
    redisUrl = cluster.url;
    clusterNodes = cluster.ports.length;
  }
  const local = await startLocalServices({ redisUrl, mongodbUri: process.env.MONGODB_URI }, say);
  atExit(() => local.stop());
  return {
    redisUrl: local.redisUrl,
    redisCluster: onCluster,
    mongodbUri: local.mongodbUri,
    local,
    async describe() {
      const out: Record<string, string> = {};
      const mongo = new MongoClient(local.mongodbUri, { serverSelectionTimeoutMS: 5000 });
      try {
        const info = await mongo.db('admin').command({ buildInfo: 1 });
        // The collector setting of a FerretDB we started: a comparison with another checkout must
        // give both the same (GOGC exported), or it measures the collector, not the service.
        const started = process.env.MONGODB_URI === undefined;
        out.mongodb = info.ferretdbVersion
          ? `FerretDB ${String(info.ferretdbVersion)} (MongoDB ${String(info.version)} wire)` +
            (started ? `, GOGC=${process.env.GOGC ?? FERRETDB_GOGC}` : '')
          : `MongoDB ${String(info.version)}`;
      } finally {
        await mongo.close();
      }
      if (process.env.MONGODB_URI === undefined) {
        const bin = await ensurePostgres(say);
        const { stdout } = await run(join(bin, 'postgres'), ['--version']);
        out.postgresql = stdout.trim();
      }
      const redis = createRedis({ url: local.redisUrl, cluster: onCluster }, 'producer');
      try {
        const nodes = await readyMasters(redis);
        const info = await nodes[0]!.info('server');
        const version = `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'}`;
        out.redis = onCluster
          ? `${version}, a Redis Cluster of ${nodes.length} masters${clusterNodes === undefined ? ' (REDIS_URL)' : ' (local, no replicas)'}, REDIS_CLUSTER=true`
          : version;
      } finally {
        redis.disconnect();
      }
      return out;
    },
  };
}

// ---- processes ----------------------------------------------------------------------------

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  rss(): number;
  /** SIGTERM (a graceful stop, which also writes a --cpu-prof profile), SIGKILL after 20 s. */
  stop(): Promise<void>;
}

const profiling = (): boolean => process.env.BENCH_PROFILE === '1';

/**
 * How the web and worker processes run: `dist` (default) the compiled code as the Procfile runs
 * it in production (bench/run.ts builds it first); `tsx` the TypeScript as `npm start` runs it
 * (the tsx loader adds its own memory and start-up work to each process).
 */
export const runtime = (): 'dist' | 'tsx' => (process.env.BENCH_RUNTIME === 'tsx' ? 'tsx' : 'dist');

/**
 * Starts `entry` (relative to the repository), with a CPU profile when BENCH_PROFILE=1;
 * `ready` resolves once `isReady` answers true (at once without one).
 */
export function spawnNode(
  name: string,
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  isReady?: () => Promise<boolean>,
): Proc & { ready: Promise<void> } {
  // One folder per process: Node writes a profile per thread (tsx's loader runs in its own).
  const profileDir = join(PROFILE_DIR, `${name}-${Date.now()}-${rand(2)}`);
  const profile = profiling() ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  if (profile.length > 0) mkdirSync(profileDir, { recursive: true });
  const compiled = runtime() === 'dist';
  const script = compiled ? join(root, 'dist', entry.replace(/\.ts$/, '.js')) : join(root, entry);
  if (compiled && !existsSync(script)) throw new Error(`${script} is missing: npm run build`);
  const loader = compiled ? [] : ['--import', 'tsx'];
  const child = launch({
    name,
    command: process.execPath,
    args: [...nodeArgs, ...profile, ...loader, script],
    cwd: root,
    env: { ...process.env, ...env },
    // The children's logs (LOG_LEVEL=warn) go to stderr with their name, off the table on stdout.
    output: { prefix: `[${name}] `, to: 'stderr' },
    ...(isReady === undefined ? {} : { ready: { probe: isReady } }),
  });
  const proc: Proc & { ready: Promise<void> } = {
    name,
    pid: child.pid!,
    child: child.child,
    ready: child.ready,
    rss: () => rssMiB(child.pid!),
    async stop() {
      await child.stop('SIGTERM', 20_000);
    },
  };
  atExit(() => proc.stop());
  return proc;
}

// ---- one scenario's app ---------------------------------------------------------------------

export interface Web extends Proc {
  base: string;
}

export interface App {
  name: string;
  env: Record<string, string>;
  prefix: string;
  adminKey: string;
  db: Db;
  mongo: MongoClient;
  /** A producer connection and the queues over it, as the web process has them (a cluster client on a cluster). */
  redis: RedisClient;
  /** The app's Redis keys (hash-tagged on a cluster), as its processes name them. */
  keys: RedisKeys;
  queues: Queues;
  /** The web process; `env` for it alone (after the app's). */
  startWeb(env?: Record<string, string>): Promise<Web>;
  /** A worker process (env WORKER_QUEUES: its queues); resolves once it takes jobs. */
  startWorker(name: string, env?: Record<string, string>, nodeArgs?: string[]): Promise<Proc>;
  /** A process of the scenario's own beside the app's (a bare server): stopped with them by `close`. */
  adopt(proc: Proc): void;
  /** Removes the queues' keys and the database, and stops the app's processes. */
  close(): Promise<void>;
}

/**
 * A fresh database and queue prefix over the stores, and the environment a scenario's web and
 * workers run with (child processes here, or in-process in bench/scale.ts and workflows-list.ts).
 */
export function freshEnvironment(
  stores: Pick<Stores, 'redisUrl' | 'mongodbUri'> & { redisCluster?: boolean },
  name: string,
  env: Record<string, string> = {},
): { env: Record<string, string>; prefix: string; adminKey: string } {
  const uri = new URL(stores.mongodbUri);
  uri.pathname = `/bench_${name.replace(/[^a-z0-9]/gi, '_')}_${rand()}`;
  const prefix = `bench${rand()}`;
  const adminKey = `adm_${rand(16)}`;
  return {
    prefix,
    adminKey,
    env: {
      REDIS_URL: stores.redisUrl,
      MONGODB_URI: uri.toString(),
      ADMIN_API_KEY: adminKey,
      SESSION_SECRET: rand(24),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'warn',
      QUEUE_PREFIX: prefix,
      VOICE_PROVIDER: 'simulator',
      ALLOW_PRIVATE_URLS: 'true',
      // The limits are not what is measured: they are set far above any rate reached here.
      RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_RATE_LIMIT_PER_MINUTE: '1000000',
      // Runs at any hour and dials numbers again and again: the compliance defaults widened (the
      // gate still decides and records every dial; each process says so in a warn line).
      CALLING_HOURS: '00:00-24:00',
      DIAL_ATTEMPTS_PER_DAY: '1000000',
      COMPLIANCE_STATE_RULES: 'false',
      INFORMATIONAL_CONSENT: 'false',
      ...(stores.redisCluster === true ? { REDIS_CLUSTER: 'true' } : {}),
      ...env,
    },
  };
}

/** A fresh database and queue prefix over the stores, with the environment every child gets. */
export async function createApp(
  stores: Stores,
  name: string,
  env: Record<string, string> = {},
): Promise<App> {
  // The web's port is chosen now: workers need its URL too (the simulator posts its webhooks there).
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const fresh = freshEnvironment(stores, name, { PORT: String(port), PUBLIC_BASE_URL: base, ...env });
  const { env: fullEnv, prefix, adminKey } = fresh;
  const mongo = new MongoClient(fullEnv.MONGODB_URI!, { maxPoolSize: 20 });
  const db = mongo.db();
  await ensureIndexes(db);
  const redis = createRedis({ url: stores.redisUrl, cluster: stores.redisCluster }, 'producer');
  const keys = redisKeys({ queuePrefix: prefix, redisCluster: stores.redisCluster });
  const queues = createQueues(redis, keys, () => {});
  const procs: Proc[] = [];
  let closed = false;
  const app: App = {
    name,
    env: fullEnv,
    prefix,
    adminKey,
    db,
    mongo,
    redis,
    keys,
    queues,
    async startWeb(env = {}) {
      const readyz = `${base}/readyz`;
      const web = declared('web', 'BENCH_WEB_NODE_ARGS');
      const proc = spawnNode(
        `${name}-web`,
        'api/server.ts',
        { ...fullEnv, ...env, ...web.env },
        web.nodeArgs,
        () => fetch(readyz).then((r) => r.ok),
      );
      procs.push(proc);
      await proc.ready;
      return { ...proc, base };
    },
    async startWorker(workerName, env = {}, nodeArgs = []) {
      // Ready once its Worker on the first queue it consumes has its blocking connection (CLIENT LIST).
      const watched = queues[(env.WORKER_QUEUES ?? QUEUE.campaigns).split(',')[0] as QueueName];
      const before = await watched.getWorkersCount();
      // e.g. BENCH_WORKER_NODE_ARGS=--max-old-space-size=64; the caller's flags last.
      const worker = declared('worker', 'BENCH_WORKER_NODE_ARGS');
      const proc = spawnNode(
        `${name}-${workerName}`,
        'workers/main.ts',
        { ...fullEnv, ...env, ...worker.env },
        [...worker.nodeArgs, ...nodeArgs],
        async () => (await watched.getWorkersCount()) > before,
      );
      procs.push(proc);
      await proc.ready;
      return proc;
    },
    adopt(proc) {
      procs.push(proc);
    },
    async close() {
      if (closed) return;
      closed = true;
      // Last started first: workers before the web they post to.
      for (const p of [...procs].reverse()) await p.stop();
      await Promise.all(Object.values(queues).map((q) => q.obliterate({ force: true }).catch(() => {})));
      await Promise.all(Object.values(queues).map((q) => q.close().catch(() => {})));
      redis.disconnect();
      await db.dropDatabase().catch(() => {});
      await mongo.close().catch(() => {});
    },
  };
  atExit(() => app.close());
  return app;
}

// ---- the API, as a client calls it ---------------------------------------------------------

export async function api<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

export interface Tenant {
  slug: string;
  key: string;
  agentId: string;
}

/** A firm (with `settings`), a firm API key and an agent, made through the API. */
export async function makeTenant(
  app: App,
  base: string,
  settings: Record<string, unknown> = {},
): Promise<Tenant> {
  const slug = `bench-${rand()}`;
  await api(base, 'POST', '/api/firms', app.adminKey, { slug, name: 'Bench firm', settings });
  const { key } = await api<{ key: string }>(base, 'POST', '/api/auth/api-keys', app.adminKey, {
    firmSlug: slug,
    name: 'bench',
  });
  const { agent_id: agentId } = await api<{ agent_id: string }>(base, 'POST', '/api/v2/create-agent', key, {
    firmSlug: slug,
    agent_name: 'Bench agent',
    voice_id: 'sim-en-us-ava',
  });
  return { slug, key, agentId };
}
