import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../core/platform/config.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices, type Services } from '../../core/wiring/services.js';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { freePort } from '../../scripts/local/ports.js';
import { startWeb, type Web } from '../../api/web.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import type { QueueName } from '../../jobs/queues.js';
import { processors } from '../../workers/processors/index.js';
import { ApiClient } from './client.js';
import { warnIfComplianceWidened } from '../../core/domain/compliance/compliance-defaults.js';

export const rand = (n = 6): string => randomBytes(n).toString('hex');

/**
 * A MongoDB URI naming a fresh database, so test files never see each other's data. Named with the
 * run's prefix, so the run's teardown can drop what is left on a MongoDB it did not start.
 */
export function freshMongoUri(): string {
  const uri = new URL(inject('mongodbUri'));
  uri.pathname = `/${inject('databasePrefix')}${rand()}`;
  return uri.toString();
}

/**
 * The databases of this fork's stopped stacks, each with every collection and index, for the
 * next stack to empty and take. A fresh one costs FerretDB and PostgreSQL about 0.8 s of CPU (66
 * tables and their indexes); emptying one 0.08–0.10 s (ten reused stacks, three times, on
 * 2026-12-04). Files of a fork run one after another, and
 * a stack takes a database only once its stack is stopped, so none is ever shared.
 */
const stoppedDatabases: string[] = [];

/** A collection holding more documents than this is dropped, not emptied (see `emptied`). */
const DROP_ABOVE = 100;

/**
 * Empties a stopped stack's database for the next one. A collection a test wrote a few documents
 * to is emptied by a delete; one it filled (an import's thousands of contacts) is dropped, since
 * FerretDB deletes by reading every document first (a delete of 5,000 took the stores 0.6 s of
 * CPU, a drop and its table and indexes made again 0.02 s). Presence and size are one look into
 * each collection (at most DROP_ABOVE + 1 `_id`s). Then ensureIndexes makes what was dropped again
 * and checks that each index is there, as a deploy's release does. Only an index of ours that a
 * test changed makes the database start afresh; any other failure fails the stack (a release
 * fault must not hide here).
 */
async function emptied(db: Db): Promise<void> {
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
  await Promise.all(
    names.map(async (name) => {
      const collection = db.collection(name);
      const held = await collection
        .find({}, { projection: { _id: 1 } })
        .limit(DROP_ABOVE + 1)
        .toArray();
      if (held.length > DROP_ABOVE) await collection.drop();
      else if (held.length > 0) await collection.deleteMany({});
    }),
  );
  try {
    await ensureIndexes(db);
  } catch (err) {
    if (!(err instanceof Error && /^index \S+ exists with key /.test(err.message))) throw err;
    await db.dropDatabase();
    await ensureIndexes(db);
  }
}

export interface Stack {
  config: Config;
  env: Record<string, string>;
  services: Services;
  web: Web;
  workers?: Workers;
  baseUrl: string;
  api: ApiClient;
  /** The platform key's client. */
  admin: ApiClient;
  stop(): Promise<void>;
}

/**
 * Tests run at any hour, dial one number many times and make campaigns of leads without consent:
 * the compliance defaults widened (the warn line says so), for every service a test starts — in
 * process or as child processes. The dial gate's and the consent rule's own tests pass the
 * defaults (and set the gate's clock).
 */
export const TEST_COMPLIANCE_ENV: Readonly<Record<string, string>> = {
  CALLING_HOURS: '00:00-24:00',
  DIAL_ATTEMPTS_PER_DAY: '1000',
  COMPLIANCE_STATE_RULES: 'false',
  CAMPAIGN_DEFAULT_PURPOSE: 'informational',
  INFORMATIONAL_CONSENT: 'false',
};

/**
 * The real web process in-process on a real socket, over the run's Redis and FerretDB, with
 * its own database and BullMQ prefix; workers too when asked.
 */
export async function startStack(
  options: {
    env?: Record<string, string>;
    workers?: boolean;
    /** Skip the release step (index creation), e.g. when MongoDB is meant to be unreachable. */
    noRelease?: boolean;
  } = {},
): Promise<Stack> {
  const port = await freePort();
  // A database of an earlier stack of this fork when this one makes its indexes over a database
  // of its own choosing: emptied below.
  const reused =
    options.noRelease === true || options.env?.MONGODB_URI !== undefined ? undefined : stoppedDatabases.pop();
  const env: Record<string, string> = {
    REDIS_URL: inject('redisUrl'),
    MONGODB_URI: reused ?? freshMongoUri(),
    ADMIN_API_KEY: `adm_${rand(16)}`,
    SESSION_SECRET: rand(24),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    QUEUE_PREFIX: `t${rand(4)}`,
    SIM_CALL_MS: '200',
    // Fakes listen on 127.0.0.1; a test of the URL policy itself passes 'false'.
    ALLOW_PRIVATE_URLS: 'true',
    ...TEST_COMPLIANCE_ENV,
    ...options.env,
  };
  const config = loadConfig(env);
  const log = createLogger(config.logLevel, 'test');
  const services = createServices(config, log, 'producer');
  warnIfComplianceWidened(config, log);
  if (reused !== undefined) await emptied(services.mongo.db);
  else if (!options.noRelease) await ensureIndexes(services.mongo.db);
  const web = await startWeb(services, '127.0.0.1');
  const workers = options.workers
    ? startWorkers(createServices(config, log, 'worker'), processors)
    : undefined;
  const baseUrl = `http://127.0.0.1:${web.port}`;
  const api = new ApiClient(baseUrl);
  return {
    config,
    env,
    services,
    web,
    ...(workers === undefined ? {} : { workers }),
    baseUrl,
    api,
    admin: api.withToken(config.adminApiKey),
    async stop() {
      await workers?.stop();
      if (options.noRelease === true || options.env?.MONGODB_URI !== undefined) {
        await services.mongo.db.dropDatabase().catch(() => {});
        await web.stop();
        return;
      }
      // Kept, indexed, for the next stack of this fork, which empties it first.
      await web.stop();
      stoppedDatabases.push(env.MONGODB_URI!);
    },
  };
}

/** A firm with its own API key client. */
export async function createFirm(
  stack: Stack,
  settings: Record<string, unknown> = {},
): Promise<{ slug: string; key: string; client: ApiClient }> {
  const slug = `firm-${rand(4)}`;
  const created = await stack.admin.post('/api/firms', { slug, name: `Firm ${slug}`, settings });
  if (created.status !== 200)
    throw new Error(`createFirm: ${created.status} ${JSON.stringify(created.body)}`);
  const key = await stack.admin.post('/api/auth/api-keys', { firmSlug: slug, name: 'test key' });
  if (key.status !== 200) throw new Error(`createApiKey: ${key.status} ${JSON.stringify(key.body)}`);
  const token = (key.body as { key: string }).key;
  return { slug, key: token, client: stack.api.withToken(token) };
}

/**
 * Workers in this process on the stack's Redis and database, with services of their own: a test
 * starts and stops them where it needs (after a kill, a second worker beside the first). `queues`:
 * those it consumes (all by default).
 */
export function startInProcessWorkers(stack: Stack, queues?: QueueName[]): Workers {
  const services = createServices(stack.config, createLogger(stack.config.logLevel, 'test'), 'worker');
  return queues === undefined
    ? startWorkers(services, processors)
    : startWorkers(services, processors, queues);
}
