// Local Redis and FerretDB for `npm start` and `npm test` when REDIS_URL / MONGODB_URI are
// unset: find or install them, start them on free 127.0.0.1 ports with data in a temporary
// folder, and stop them (then remove the folder) at the end. FerretDB stores its data in a
// throwaway PostgreSQL cluster made in the same folder. Production never runs this.
// One file per store: redis.ts, postgres.ts, ferretdb.ts; what they share: install.ts, ports.ts.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeAbandoned, stampOwner } from './abandoned.js';
import { ensureFerretDb, startFerretDb } from './ferretdb.js';
import { LocalServiceError, type Say } from './install.js';
import { ensurePostgres, startPostgres } from './postgres.js';
import { ensureRedisServer, startRedis, type LocalRedis, type RedisOptions } from './redis.js';

export { ensureFerretDb, FERRETDB_VERSION } from './ferretdb.js';
export { ensurePostgres, POSTGRES_DATABASE } from './postgres.js';
export { ensureRedisServer, startRedis, type LocalRedis, type RedisOptions } from './redis.js';
export { freePort } from './ports.js';
export { LocalServiceError };

/** The stores' folder of a run, in the temporary directory. */
const FOLDER_PREFIX = 'intake-local-';

export interface LocalServices {
  redisUrl: string;
  mongodbUri: string;
  /** The local Redis server process, when we started one (tests stop and restart it). */
  redis?: LocalRedis;
  /** The local FerretDB and its PostgreSQL, when we started them (the chaos run stops and restarts them). */
  ferretdb?: LocalFerretDb;
  /** Stops FerretDB, PostgreSQL and Redis, each waited for, then removes their folder. */
  stop(): Promise<void>;
}

/** FerretDB over its PostgreSQL cluster: stopped together and started again on the same ports and data. */
export interface LocalFerretDb {
  port: number;
  /** Its PostgreSQL (FerretDB's database), for reading its statistics. */
  postgresUrl: string;
  /** Stops FerretDB, then PostgreSQL (fast shutdown: sessions are ended). */
  stop(): Promise<void>;
  /** Starts PostgreSQL on its data folder again, then FerretDB. */
  start(): Promise<void>;
}

async function startFerretDbOnPostgres(
  ferretBin: string,
  postgresBin: string,
  dir: string,
  ownGroup: boolean,
) {
  await mkdir(join(dir, 'postgres'));
  const postgres = await startPostgres(postgresBin, join(dir, 'postgres'), ownGroup);
  try {
    await mkdir(join(dir, 'ferretdb'));
    const ferret = await startFerretDb(ferretBin, join(dir, 'ferretdb'), postgres.url, ownGroup);
    const ferretdb: LocalFerretDb = {
      port: ferret.port,
      postgresUrl: postgres.url,
      async stop() {
        await ferret.stop();
        await postgres.stop();
      },
      async start() {
        await postgres.start();
        await ferret.start();
      },
    };
    return ferretdb;
  } catch (err) {
    await postgres.stop();
    throw err;
  }
}

/**
 * Uses REDIS_URL / MONGODB_URI when given; starts local servers for whichever is missing:
 * Redis, and FerretDB over a PostgreSQL cluster of its own. Installs run one after the other
 * (apt-get takes a lock); the servers then start side by side.
 *
 * `ownGroups` (npm start): each server in a process group of its own, so that a terminal's
 * Ctrl-C leaves them to `stop()`, after the processes using them. Not by default: a new group
 * is a new session, which Linux schedules as a CPU share of its own (autogroup), and on a busy
 * machine the stores then take CPU from the web and worker processes of tests and chaos runs
 * (the chaos subset's effects ran late enough to miss its fault window).
 */
export async function startLocalServices(
  given: { redisUrl?: string; mongodbUri?: string },
  say: Say = (line) => process.stderr.write(`[local] ${line}\n`),
  options: { redis?: RedisOptions; ownGroups?: boolean } = {},
): Promise<LocalServices> {
  // The folders of earlier runs that ended without removing theirs (scripts/local/abandoned.ts).
  for (const left of await removeAbandoned(tmpdir(), FOLDER_PREFIX))
    say(`removed ${left}, left by a run that ended`);
  const dir = await mkdtemp(join(tmpdir(), FOLDER_PREFIX));
  await stampOwner(dir);
  let redis: LocalRedis | undefined;
  let ferretdb: LocalFerretDb | undefined;
  let stopped: Promise<void> | undefined;
  // Once only, however many times it is asked for (a signal and an exit path may both ask).
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await ferretdb?.stop();
      await redis?.stop();
      await rm(dir, { recursive: true, force: true });
    })());
  try {
    const redisBin = given.redisUrl ? undefined : await ensureRedisServer(say);
    const ferretBin = given.mongodbUri ? undefined : await ensureFerretDb(say);
    const postgresBin = given.mongodbUri ? undefined : await ensurePostgres(say);
    const started = await Promise.allSettled([
      (async () => {
        if (redisBin === undefined) return;
        await mkdir(join(dir, 'redis'));
        redis = await startRedis(redisBin, join(dir, 'redis'), {
          ...options.redis,
          ownGroup: options.ownGroups,
        });
      })(),
      (async () => {
        if (ferretBin === undefined || postgresBin === undefined) return;
        ferretdb = await startFerretDbOnPostgres(ferretBin, postgresBin, dir, options.ownGroups ?? false);
      })(),
    ]);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    redisUrl: given.redisUrl || `redis://127.0.0.1:${redis!.port}`,
    mongodbUri: given.mongodbUri || `mongodb://127.0.0.1:${ferretdb!.port}/intake`,
    ...(redis === undefined ? {} : { redis }),
    ...(ferretdb === undefined ? {} : { ferretdb }),
    stop,
  };
}
