// Local Redis and FerretDB for `npm start` and `npm test` when REDIS_URL / MONGODB_URI are
// unset: find or install them, start them on free 127.0.0.1 ports with data in a temporary
// folder, and stop them on exit. FerretDB stores its data in a throwaway PostgreSQL cluster
// (Debian's `postgresql`) made in the same folder. Production never runs this.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile, chmod, chown, access, readFile, readdir } from 'node:fs/promises';
import { constants, openSync, closeSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const FERRETDB_VERSION = 'v1.24.2';
const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';

export class LocalServiceError extends Error {}

type Say = (line: string) => void;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function which(name: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin', '/usr/local/bin'])) {
    if (dir && (await isExecutable(join(dir, name)))) return join(dir, name);
  }
  return null;
}

/** redis-server from PATH, else from Debian's package (as root, with apt-get). */
export async function ensureRedisServer(say: Say): Promise<string> {
  const found = await which('redis-server');
  if (found) return found;
  const apt = await which('apt-get');
  if (apt === null || process.getuid?.() !== 0) {
    throw new LocalServiceError(
      'redis-server is not installed and cannot be installed here (needs apt-get as root). ' +
        'Install Redis 6.2+ or set REDIS_URL to a Redis you run.',
    );
  }
  say('installing redis-server with apt-get ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run(apt, ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
  await run(apt, ['install', '-y', '--no-install-recommends', 'redis-server'], {
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  const installed = await which('redis-server');
  if (!installed)
    throw new LocalServiceError('apt-get installed redis-server but it is not on PATH; set REDIS_URL.');
  return installed;
}

async function ferretVersion(path: string): Promise<string | null> {
  try {
    const { stdout } = await run(path, ['--version'], { timeout: 10_000 });
    return /version:\s*(\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

async function goBinDir(go: string): Promise<string> {
  const { stdout } = await run(go, ['env', 'GOBIN', 'GOPATH']);
  const [gobin, gopath] = stdout.split('\n');
  return gobin?.trim() || join(gopath?.trim() || join(homedir(), 'go'), 'bin');
}

/**
 * FerretDB 1.24.2: `go install ...@v1.24.2` first. Where the module proxy refuses the
 * version-list lookup that `go install` makes (or the result lacks its version stamp), the
 * same module is fetched with `go mod download` and built from its source with the version
 * file its build expects.
 */
export async function ensureFerretDb(say: Say): Promise<string> {
  for (const candidate of [process.env.FERRETDB_BIN, await which('ferretdb')]) {
    if (candidate && (await ferretVersion(candidate)) === FERRETDB_VERSION) return candidate;
  }
  const go =
    (await which('go')) ?? ((await isExecutable('/usr/local/go/bin/go')) ? '/usr/local/go/bin/go' : null);
  if (go === null) {
    throw new LocalServiceError(
      'FerretDB is not installed and Go is missing, so it cannot be built. Install Go 1.22+ or set MONGODB_URI ' +
        'to a MongoDB-compatible server.',
    );
  }
  const binDir = await goBinDir(go);
  const target = join(binDir, 'ferretdb');
  if ((await ferretVersion(target)) === FERRETDB_VERSION) return target;
  say(`installing FerretDB ${FERRETDB_VERSION} with go install (takes a few minutes the first time) ...`);
  const goEnv = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false' };
  try {
    await run(go, ['install', `${FERRETDB_MODULE}/cmd/ferretdb@${FERRETDB_VERSION}`], {
      env: goEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
    if ((await ferretVersion(target)) === FERRETDB_VERSION) return target;
  } catch (err) {
    say(`go install did not finish (${firstLine(err)}); building the same module from source ...`);
  }
  const { stdout } = await run(go, ['mod', 'download', '-json', `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], {
    env: goEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  const moduleDir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!moduleDir)
    throw new LocalServiceError('go mod download gave no module directory for FerretDB; set MONGODB_URI.');
  const src = await mkdtemp(join(tmpdir(), 'ferretdb-src-'));
  try {
    await cp(moduleDir, src, { recursive: true });
    await chmod(join(src, 'build', 'version'), 0o755);
    await writeFile(join(src, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
    await mkdir(binDir, { recursive: true });
    await run(go, ['build', '-o', target, './cmd/ferretdb'], {
      cwd: src,
      env: goEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
  } finally {
    await rm(src, { recursive: true, force: true });
  }
  if ((await ferretVersion(target)) !== FERRETDB_VERSION) {
    throw new LocalServiceError(
      `FerretDB was built at ${target} but does not report ${FERRETDB_VERSION}; set MONGODB_URI.`,
    );
  }
  return target;
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim().split('\n').pop() ?? '';
}

async function waitForPort(
  port: number,
  child: ChildProcess,
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null)
      throw new LocalServiceError(`${name} exited with code ${child.exitCode} at start`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new LocalServiceError(`${name} did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

export interface LocalServices {
  redisUrl: string;
  mongodbUri: string;
  /** The local Redis server process, when we started one (tests stop and restart it). */
  redis?: LocalRedis;
  /** The local FerretDB and its PostgreSQL, when we started them (the chaos run stops and restarts them). */
  ferretdb?: LocalFerretDb;
  stop(): Promise<void>;
}

export interface LocalRedis {
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** FerretDB over its PostgreSQL cluster: stopped together and started again on the same ports and data. */
export interface LocalFerretDb {
  port: number;
  /** Stops FerretDB, then PostgreSQL (fast shutdown: sessions are ended). */
  stop(): Promise<void>;
  /** Starts PostgreSQL on its data folder again, then FerretDB. */
  start(): Promise<void>;
}

export interface RedisOptions {
  /**
   * Keep the data across a stop and start (append-only file, flushed on shutdown), as a
   * production Redis does; by default a stopped Redis comes back empty.
   */
  persistent?: boolean;
}

export async function startRedis(bin: string, dir: string, options: RedisOptions = {}): Promise<LocalRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn(
      bin,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        options.persistent ? 'yes' : 'no',
        ...(options.persistent ? ['--appendfsync', 'everysec'] : []),
        '--maxmemory-policy',
        'noeviction',
        '--protected-mode',
        'yes',
        '--loglevel',
        'warning',
      ],
      { stdio: 'ignore' },
    );
    await waitForPort(port, child, 'redis-server');
  };
  const stop = async (): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  };
  await start();
  return { port, start, stop };
}

/** Stops a child with `signal`, then SIGKILL after `graceMs`; resolves once it has exited. */
function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return resolve();
    const hard = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    child.kill(signal);
  });
}

/**
 * PostgreSQL server binaries: POSTGRES_BIN_DIR, else Debian's /usr/lib/postgresql/<version>/bin
 * (the newest there), else Debian's `postgresql` installed with apt-get (as root). Returns the
 * folder holding initdb, postgres and createdb.
 */
export async function ensurePostgres(say: Say): Promise<string> {
  const found = await findPostgres();
  if (found) return found;
  const apt = await which('apt-get');
  if (apt === null || process.getuid?.() !== 0) {
    throw new LocalServiceError(
      'PostgreSQL (initdb, postgres) is not installed and cannot be installed here (needs apt-get as root). ' +
        'Install PostgreSQL 15 and set POSTGRES_BIN_DIR to its bin folder, or set MONGODB_URI.',
    );
  }
  say('installing postgresql with apt-get ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run(apt, ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
  await run(apt, ['install', '-y', '--no-install-recommends', 'postgresql'], {
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  const installed = await findPostgres();
  if (!installed)
    throw new LocalServiceError(
      'apt-get installed postgresql but no /usr/lib/postgresql/<version>/bin was found; set MONGODB_URI.',
    );
  return installed;
}

const POSTGRES_TOOLS = ['initdb', 'postgres', 'createdb', 'psql'];

async function hasPostgresTools(dir: string): Promise<boolean> {
  const found = await Promise.all(POSTGRES_TOOLS.map((name) => isExecutable(join(dir, name))));
  return found.every(Boolean);
}

async function findPostgres(): Promise<string | null> {
  const given = process.env.POSTGRES_BIN_DIR;
  if (given) {
    if (await hasPostgresTools(given)) return given;
    throw new LocalServiceError(`POSTGRES_BIN_DIR=${given} lacks one of ${POSTGRES_TOOLS.join(', ')}.`);
  }
  const root = '/usr/lib/postgresql';
  const versions = await readdir(root).catch(() => [] as string[]);
  for (const version of versions.filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))) {
    if (await hasPostgresTools(join(root, version, 'bin'))) return join(root, version, 'bin');
  }
  return null;
}

/** PostgreSQL refuses to run as root: as root, its processes run as the `postgres` system user. */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  const fields = passwd
    .split('\n')
    .find((line) => line.startsWith('postgres:'))
    ?.split(':');
  const uid = Number(fields?.[2]);
  const gid = Number(fields?.[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0) {
    throw new LocalServiceError(
      'PostgreSQL does not run as root and there is no `postgres` system user to run it as ' +
        "(Debian's postgresql package creates one); set MONGODB_URI.",
    );
  }
  return { uid, gid };
}

// A throwaway cluster: no durability (nothing survives the run), modest memory, TCP on
// 127.0.0.1 only, no unix socket, no WAL beyond what crash-free running needs.
const POSTGRES_SETTINGS: Record<string, string> = {
  listen_addresses: '127.0.0.1',
  unix_socket_directories: '',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  wal_level: 'minimal',
  max_wal_senders: '0',
  max_wal_size: '1GB',
  // FerretDB's pool opens at most 50 connections; createdb and a psql session fit beside it.
  max_connections: '100',
  shared_buffers: '128MB',
  jit: 'off',
  log_min_messages: 'warning',
  // FerretDB prepares every statement (pgx's statement cache); a generic plan chosen while a
  // collection is small is a sequential scan that no index can replace, and it sticks until
  // the table's statistics next change. Custom plans see the filter's constants and so can
  // use FERRETDB_ID_GIN_SQL's index.
  plan_cache_mode: 'force_custom_plan',
  // Faster (de)compression of the large documents every sequential scan still detoasts.
  default_toast_compression: 'lz4',
};

// FerretDB 1.24 sends {_id: v} (and every other pushed-down equality) as
// `_jsonb->'_id' @> '"v"'`; the unique btree index it makes on (_jsonb->'_id') serves only `=`
// (which it uses only for the write after the read), so point reads, and the read inside every
// update and delete, scan the table. A GIN index on the same expression serves `@>`: this event
// trigger gives one to each table FerretDB creates for a collection. FerretDB's own metadata
// (listIndexes) never sees it.
const FERRETDB_ID_GIN_SQL = `
CREATE FUNCTION public.ferretdb_id_gin() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE t regclass;
BEGIN
  FOR t IN SELECT objid::regclass FROM pg_event_trigger_ddl_commands()
           WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'
  LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = t AND attname = '_jsonb' AND NOT attisdropped)
       AND (SELECT relname FROM pg_class WHERE oid = t) <> '_ferretdb_database_metadata' THEN
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> ''_id'') jsonb_path_ops)', t);
    END IF;
  END LOOP;
END
$fn$;
CREATE EVENT TRIGGER ferretdb_id_gin ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION public.ferretdb_id_gin();
`;

export const POSTGRES_DATABASE = 'ferretdb';

async function startPostgres(
  binDir: string,
  dir: string,
): Promise<{ port: number; url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const user = await postgresUser();
  const asUser = user === undefined ? {} : { uid: user.uid, gid: user.gid };
  if (user !== undefined) {
    // The run folder stays root's; the postgres user may only pass through it to its own.
    await chmod(dirname(dir), 0o711);
    await chown(dir, user.uid, user.gid);
  }
  const dataDir = join(dir, 'data');
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  try {
    await run(
      join(binDir, 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--username=postgres',
        '--auth=trust',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      { cwd: dir, env, timeout: 60_000, ...asUser },
    );
  } catch (err) {
    throw new LocalServiceError(`initdb failed: ${firstLine(err)}`);
  }
  const port = await freePort();
  const logPath = join(dir, 'postgres.log');
  let child: ChildProcess | undefined;
  let spawnError: Error | undefined;
  const spawnServer = (): void => {
    const log = openSync(logPath, 'a');
    spawnError = undefined;
    child = spawn(
      join(binDir, 'postgres'),
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        ...Object.entries(POSTGRES_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      ],
      { cwd: dir, env, stdio: ['ignore', log, log], ...asUser },
    );
    closeSync(log);
    child.once('error', (err) => (spawnError = err));
  };
  // SIGINT is PostgreSQL's fast shutdown: it ends the sessions instead of waiting for them.
  const stop = async (): Promise<void> => {
    if (child !== undefined) await stopChild(child, 'SIGINT');
  };
  /** Retries `probe` (a client command) until the server answers it. */
  const untilAnswered = async (probe: () => Promise<unknown>): Promise<void> => {
    const started = Date.now();
    for (;;) {
      const c = child!;
      if (spawnError !== undefined || c.exitCode !== null || c.signalCode !== null) {
        const tail = (await readFile(logPath, 'utf8').catch(() => ''))
          .trim()
          .split('\n')
          .slice(-3)
          .join(' | ');
        throw new LocalServiceError(`postgres did not start: ${spawnError?.message ?? tail}`);
      }
      try {
        await probe();
        return;
      } catch (err) {
        if (Date.now() - started > 30_000)
          throw new LocalServiceError(`postgres did not accept connections within 30 s: ${firstLine(err)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const psql = (command: string) =>
    run(
      join(binDir, 'psql'),
      [
        '--host=127.0.0.1',
        `--port=${port}`,
        '--username=postgres',
        `--dbname=${POSTGRES_DATABASE}`,
        '--no-psqlrc',
        '--quiet',
        '--set=ON_ERROR_STOP=1',
        `--command=${command}`,
      ],
      { env, timeout: 10_000 },
    );
  spawnServer();
  try {
    // createdb both waits for the server to accept connections and makes FerretDB's database.
    await untilAnswered(() =>
      run(
        join(binDir, 'createdb'),
        ['--host=127.0.0.1', `--port=${port}`, '--username=postgres', POSTGRES_DATABASE],
        { env, timeout: 10_000 },
      ),
    );
    try {
      await psql(FERRETDB_ID_GIN_SQL);
    } catch (err) {
      throw new LocalServiceError(`could not add FerretDB's _id index trigger: ${firstLine(err)}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/${POSTGRES_DATABASE}`,
    stop,
    // The same data folder and port: everything written before the stop is there again.
    async start() {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) return;
      spawnServer();
      try {
        await untilAnswered(() => psql('SELECT 1'));
      } catch (err) {
        await stop();
        throw err;
      }
    },
  };
}

async function startFerretDb(
  bin: string,
  dir: string,
  postgresUrl: string,
): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const stop = async (): Promise<void> => {
    if (child !== undefined) await stopChild(child, 'SIGTERM');
  };
  const start = async (): Promise<void> => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) return;
    child = spawn(
      bin,
      [
        '--handler=postgresql',
        `--postgresql-url=${postgresUrl}`,
        `--listen-addr=127.0.0.1:${port}`,
        '--telemetry=disable',
        '--debug-addr=-',
        `--state-dir=${dir}`,
        '--log-level=error',
      ],
      { stdio: 'ignore' },
    );
    try {
      await waitForPort(port, child, 'ferretdb');
    } catch (err) {
      await stop();
      throw err;
    }
  };
  await start();
  return { port, stop, start };
}

/**
 * Uses REDIS_URL / MONGODB_URI when given; starts local servers for whichever is missing:
 * Redis, and FerretDB over a PostgreSQL cluster of its own. Installs run one after the other
 * (apt-get takes a lock); the servers then start side by side.
 */
export async function startLocalServices(
  given: { redisUrl?: string; mongodbUri?: string },
  say: Say = (line) => process.stderr.write(`[local] ${line}\n`),
  options: { redis?: RedisOptions } = {},
): Promise<LocalServices> {
  const dir = await mkdtemp(join(tmpdir(), 'intake-local-'));
  // Stopped last to first: FerretDB always before the PostgreSQL it uses.
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
  };
  let redisUrl = given.redisUrl;
  let mongodbUri = given.mongodbUri;
  let redis: LocalRedis | undefined;
  let ferretdb: LocalFerretDb | undefined;
  try {
    const redisBin = redisUrl ? undefined : await ensureRedisServer(say);
    const ferretBin = mongodbUri ? undefined : await ensureFerretDb(say);
    const postgresBin = mongodbUri ? undefined : await ensurePostgres(say);
    const started = await Promise.allSettled([
      (async () => {
        if (redisBin === undefined) return;
        await mkdir(join(dir, 'redis'));
        redis = await startRedis(redisBin, join(dir, 'redis'), options.redis);
        stops.push(redis.stop);
        redisUrl = `redis://127.0.0.1:${redis.port}`;
      })(),
      (async () => {
        if (ferretBin === undefined || postgresBin === undefined) return;
        await mkdir(join(dir, 'postgres'));
        const postgres = await startPostgres(postgresBin, join(dir, 'postgres'));
        stops.push(postgres.stop);
        await mkdir(join(dir, 'ferretdb'));
        const ferret = await startFerretDb(ferretBin, join(dir, 'ferretdb'), postgres.url);
        stops.push(ferret.stop);
        mongodbUri = `mongodb://127.0.0.1:${ferret.port}/intake`;
        ferretdb = {
          port: ferret.port,
          async stop() {
            await ferret.stop();
            await postgres.stop();
          },
          async start() {
            await postgres.start();
            await ferret.start();
          },
        };
      })(),
    ]);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
  } catch (err) {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    redisUrl: redisUrl!,
    mongodbUri: mongodbUri!,
    ...(redis === undefined ? {} : { redis }),
    ...(ferretdb === undefined ? {} : { ferretdb }),
    async stop() {
      await stopAll();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
