// The processes a chaos run drives: Redis (persistent, so a stop and start keeps its data, as a
// production Redis does), FerretDB on PostgreSQL (restartable), the web process and two worker
// processes as the Procfile runs them (child processes of the real entries), the SMTP / Slack /
// Clio fakes, and the webhook proxy the simulator's deliveries go through. With `redis: 'cluster'`
// Redis is a local three-master Redis Cluster instead (REDIS_CLUSTER=true; not restartable).
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { redisKeys, type RedisKeys } from '../../core/platform/redis-keys.js';
import { startRedisCluster, type LocalRedisCluster } from '../local/redis-cluster.js';
import { launchAsProcfile } from '../local/procfile.js';
import type { Db, MongoClient } from 'mongodb';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { QUEUE_NAMES, createQueues, type Queues } from '../../jobs/queues.js';
import {
  ensureRedisServer,
  freePort,
  startLocalServices,
  startRedis,
  type LocalFerretDb,
  type LocalRedis,
  type LocalServices,
} from '../local/services.js';
import { masters } from '../../core/platform/redis-cluster.js';
import { startFakeClio, type FakeClio } from '../../test/fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../../test/fakes/slack-server.js';
import { startFakeSmtp, type FakeSmtp } from '../../test/fakes/smtp-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/fakes/webhook-receiver.js';
import { type Launched } from '../local/launcher.js';
import { startFloodCalcom, type FloodCalcom } from './flood-calcom.js';
import { startChaosProxy, type ChaosProxy } from './proxy.js';

export interface ClusterOptions {
  /** Where the processes' logs go. */
  runDir: string;
  /** A MongoDB to use instead of starting FerretDB (then it cannot be stopped and restarted). */
  mongodbUri?: string;
  workers?: number;
  /** Extra environment of the web and worker processes. */
  env?: Record<string, string>;
  /** One redis-server (default), or a local Redis Cluster of three masters. */
  redis?: 'single' | 'cluster';
  say: (line: string) => void;
}

export interface WorkerSlot {
  index: number;
  process: Launched;
  /** How many times this slot's process was started. */
  generation: number;
  logFile: string;
}

export interface StopResult {
  signal: NodeJS.Signals;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  afterMs: number;
}

/** The web or a worker as a child process, as its Procfile line runs it; its output appended to `logFile`. */
function spawnEntry(
  type: 'web' | 'worker',
  env: Record<string, string>,
  logFile: string,
  ready?: { url: string },
): Launched {
  return launchAsProcfile(
    type,
    { ...process.env, ...env },
    {
      name: type,
      output: { file: logFile },
      // Loading the service through tsx can take minutes on a 2-core machine at load 20–30.
      ...(ready === undefined ? {} : { ready, readyTimeoutMs: 600_000 }),
    },
  );
}

/** Clusters still running, so that an interrupted run (Ctrl-C) can stop what it started. */
export const liveClusters = new Set<Cluster>();

export { FLOOD_CALCOM } from './flood-calcom.js';

export class Cluster {
  readonly workers: WorkerSlot[] = [];
  web!: Launched;
  webUrl = '';
  env: Record<string, string> = {};
  /** The driver's own connections, for monitoring and the final checks. */
  mongo!: MongoClient;
  db!: Db;
  /** Made as the service makes its own (the same watchdog over the driver's monitor). */
  private mongoHandle: Mongo | undefined;
  redis!: RedisClient;
  queues!: Queues;
  smtp!: FakeSmtp;
  slack!: FakeSlack;
  /** The firms' own webhook receivers (each firm subscribes one endpoint to every event). */
  events!: WebhookReceiver;
  clio!: FakeClio;
  /** A firm's own Cal.com answering a slot every minute: 14 days are about 1 MiB (the availability flood). */
  calcom!: FloodCalcom;
  proxy!: ChaosProxy;
  /** Redis' maxmemory for the run (set on start and after each restart), when the run sets one. */
  redisMaxMemory: number | undefined;
  private local: LocalServices | undefined;
  private ownRedis: { server: LocalRedis; dir: string } | undefined;
  private redisCluster: { cluster: LocalRedisCluster; dir: string } | undefined;
  private stopping = false;

  private constructor(private readonly options: ClusterOptions) {}

  get redisServer(): LocalRedis {
    const server = this.local?.redis ?? this.ownRedis?.server;
    if (server === undefined) throw new Error('a Redis Cluster run has no single Redis to stop and start');
    return server;
  }

  /** The service's Redis keys in this run (hash-tagged on a cluster). */
  get keys(): RedisKeys {
    return redisKeys({ queuePrefix: this.queuePrefix, redisCluster: this.env.REDIS_CLUSTER === 'true' });
  }

  /** FerretDB and its PostgreSQL, when this cluster started them. */
  get ferretdb(): LocalFerretDb | undefined {
    return this.local?.ferretdb;
  }

  get adminKey(): string {
    return this.env.ADMIN_API_KEY!;
  }

  get queuePrefix(): string {
    return this.env.QUEUE_PREFIX!;
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    const cluster = new Cluster(options);
    liveClusters.add(cluster);
    try {
      await cluster.boot();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private async boot(): Promise<void> {
    const { say } = this.options;
    await mkdir(this.options.runDir, { recursive: true });
    let redisUrl: string;
    let mongodbUri: string;
    const onCluster = this.options.redis === 'cluster';
    if (onCluster) {
      const dir = await mkdtemp(join(tmpdir(), 'chaos-redis-cluster-'));
      say('starting a Redis Cluster of three masters ...');
      const cluster = await startRedisCluster(await ensureRedisServer(say), dir);
      this.redisCluster = { cluster, dir };
      redisUrl = cluster.url;
      if (this.options.mongodbUri === undefined) {
        say('starting FerretDB on PostgreSQL ...');
        this.local = await startLocalServices({ redisUrl }, (l) => say(l));
        mongodbUri = this.local.mongodbUri;
      } else mongodbUri = this.options.mongodbUri;
    } else if (this.options.mongodbUri === undefined) {
      say('starting Redis (persistent) and FerretDB on PostgreSQL ...');
      this.local = await startLocalServices({}, (l) => say(l), { redis: { persistent: true } });
      redisUrl = this.local.redisUrl;
      mongodbUri = this.local.mongodbUri;
    } else {
      const dir = await mkdtemp(join(tmpdir(), 'chaos-redis-'));
      const server = await startRedis(await ensureRedisServer(say), dir, { persistent: true });
      this.ownRedis = { server, dir };
      redisUrl = `redis://127.0.0.1:${server.port}`;
      mongodbUri = this.options.mongodbUri;
    }
    [this.smtp, this.slack, this.clio, this.proxy, this.calcom, this.events] = await Promise.all([
      startFakeSmtp(),
      startFakeSlack(),
      startFakeClio(`clio-${randomBytes(6).toString('hex')}`),
      startChaosProxy(),
      startFloodCalcom(),
      startWebhookReceiver(),
    ]);
    const webPort = await freePort();
    this.webUrl = `http://127.0.0.1:${webPort}`;
    this.proxy.target = this.webUrl;
    this.env = {
      REDIS_URL: redisUrl,
      MONGODB_URI: mongodbUri,
      ADMIN_API_KEY: `adm_${randomBytes(16).toString('hex')}`,
      SESSION_SECRET: randomBytes(24).toString('hex'),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      // The simulator's webhooks go to the proxy, which records and forwards them.
      PUBLIC_BASE_URL: this.proxy.url,
      VOICE_PROVIDER: 'simulator',
      SMTP_URL: this.smtp.url,
      MAIL_FROM: 'Intake Chaos <chaos@intake.test>',
      CLIO_BASE_URL: this.clio.url,
      ALLOW_PRIVATE_URLS: 'true',
      // Events out: retries within the run's settling time (the receiver itself never fails).
      WEBHOOK_RETRY_SCHEDULE: '1s,2s,5s,10s,20s,30s,60s',
      LOG_LEVEL: 'warn',
      QUEUE_PREFIX: `chaos${randomBytes(3).toString('hex')}`,
      SIM_CALL_MS: '1000',
      // Runs at any hour and dials numbers again and again: the compliance defaults widened (the
      // gate still decides and records every dial; each process says so in a warn line).
      CALLING_HOURS: '00:00-24:00',
      DIAL_ATTEMPTS_PER_DAY: '1000000',
      COMPLIANCE_STATE_RULES: 'false',
      INFORMATIONAL_CONSENT: 'false',
      JOB_LOCK_MS: '10000',
      CAMPAIGN_RETRY_DELAY_MS: '5000',
      SHUTDOWN_TIMEOUT_MS: '25000',
      // The run is about faults, not rate limits: the driver and the simulator are not throttled.
      RATE_LIMIT_PER_MINUTE: '1000000',
      WEBHOOK_RATE_LIMIT_PER_MINUTE: '1000000',
      ...(onCluster ? { REDIS_CLUSTER: 'true' } : {}),
      ...this.options.env,
    };
    this.mongoHandle = createMongo(mongodbUri);
    this.mongo = this.mongoHandle.client;
    this.db = this.mongoHandle.db;
    say('release: creating indexes ...');
    await ensureIndexes(this.db);
    if (onCluster) this.redis = createRedis({ url: redisUrl, cluster: true }, 'worker');
    else {
      this.redis = new Redis(redisUrl, { maxRetriesPerRequest: null, retryStrategy: () => 200 });
      this.redis.on('error', () => {});
    }
    this.queues = createQueues(this.redis, this.keys, () => {});
    await this.startWeb(webPort);
    for (let i = 0; i < (this.options.workers ?? 2); i++) this.startWorker(i);
    say(`web ${this.webUrl}, ${this.workers.length} workers, logs in ${this.options.runDir}`);
  }

  private async startWeb(port: number): Promise<void> {
    this.web = spawnEntry('web', { ...this.env, PORT: String(port) }, join(this.options.runDir, 'web.log'), {
      url: `${this.webUrl}/readyz`,
    });
    await this.web.ready;
  }

  /** Starts (or starts again) the worker process of slot `index`. */
  startWorker(index: number): WorkerSlot {
    const logFile = join(this.options.runDir, `worker-${index + 1}.log`);
    const previous = this.workers[index];
    const slot: WorkerSlot = {
      index,
      process: spawnEntry('worker', this.env, logFile),
      generation: (previous?.generation ?? 0) + 1,
      logFile,
    };
    this.workers[index] = slot;
    return slot;
  }

  /** Sends `signal` to a worker and waits for it to exit (SIGKILL after `limitMs`). */
  async signalWorker(index: number, signal: NodeJS.Signals, limitMs = 60_000): Promise<StopResult> {
    const sent = Date.now();
    const exit = await this.workers[index]!.process.stop(signal, limitMs);
    return { signal, exitCode: exit.code, exitSignal: exit.signal, afterMs: Date.now() - sent };
  }

  /** Jobs active in every queue now (0 while Redis is unreachable). */
  async activeJobs(): Promise<number> {
    if (this.redis.status !== 'ready') return 0;
    const counts = await Promise.all(QUEUE_NAMES.map((q) => this.queues[q].getActiveCount()));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Lines a worker slot logged (pino JSON), parsed; other lines are skipped. */
  async workerLog(index: number): Promise<Array<Record<string, unknown>>> {
    const text = await readFile(this.workers[index]!.logFile, 'utf8').catch(() => '');
    const out: Array<Record<string, unknown>> = [];
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a partial line
      }
    }
    return out;
  }

  /** Sets Redis' maxmemory (noeviction, as the queues need) when the run has one; a restart loses it. */
  async applyRedisLimit(): Promise<void> {
    if (this.redisMaxMemory === undefined) return;
    for (const node of masters(this.redis)) {
      await node.config('SET', 'maxmemory-policy', 'noeviction');
      await node.config('SET', 'maxmemory', String(this.redisMaxMemory));
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    liveClusters.delete(this);
    const children = [...this.workers.map((w) => w.process), this.web].filter(Boolean);
    await Promise.all(children.map((child) => child.stop('SIGTERM', 30_000)));
    if (this.queues) await Promise.allSettled(Object.values(this.queues).map((q) => q.close()));
    this.redis?.disconnect();
    await this.mongoHandle?.close().catch(() => {});
    await Promise.allSettled([
      this.smtp?.stop(),
      this.slack?.close(),
      this.events?.close(),
      this.clio?.close(),
      this.proxy?.close(),
      this.calcom?.stop(),
    ]);
    if (this.redisCluster) {
      await this.redisCluster.cluster.stop();
      await rm(this.redisCluster.dir, { recursive: true, force: true });
    }
    if (this.ownRedis) {
      await this.ownRedis.server.stop();
      await rm(this.ownRedis.dir, { recursive: true, force: true });
    }
    await this.local?.stop();
  }
}
