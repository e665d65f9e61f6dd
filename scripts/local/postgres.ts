// A throwaway PostgreSQL cluster for FerretDB: Debian's server binaries (installed with apt-get
// as root when missing), initdb in a folder we give it, the server on a free 127.0.0.1 port,
// and FerretDB's database with the index trigger FerretDB's point reads need.
import { chmod, chown, readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { launch, type Launched } from './launcher.js';
import { aptInstall, isExecutable, lastLine, LocalServiceError, run, type Say } from './install.js';
import { freePort } from './ports.js';

export const POSTGRES_DATABASE = 'ferretdb';

export interface LocalPostgres {
  port: number;
  url: string;
  stop(): Promise<void>;
  /** The same data folder and port: everything written before the stop is there again. */
  start(): Promise<void>;
}

/**
 * PostgreSQL server binaries: POSTGRES_BIN_DIR, else Debian's /usr/lib/postgresql/<version>/bin
 * (the newest there), else Debian's `postgresql` installed with apt-get (as root). Returns the
 * folder holding initdb, postgres and createdb.
 */
export async function ensurePostgres(say: Say): Promise<string> {
  const found = await findPostgres();
  if (found) return found;
  await aptInstall(
    'postgresql',
    'PostgreSQL (initdb, postgres) is not installed and cannot be installed here (needs apt-get as root). ' +
      'Install PostgreSQL 15 and set POSTGRES_BIN_DIR to its bin folder, or set MONGODB_URI.',
    say,
  );
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
// (listIndexes) never sees it. Without GIN's pending list (`fastupdate = off`): each insert
// goes into the index at once, where with the list every lookup would also read through the
// entries inserted since the last vacuum (a sixth of PostgreSQL's CPU a call, measured in
// docs/performance.md).
const FERRETDB_ID_GIN_SQL = `
CREATE FUNCTION public.ferretdb_id_gin() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE t regclass;
BEGIN
  FOR t IN SELECT objid::regclass FROM pg_event_trigger_ddl_commands()
           WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'
  LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = t AND attname = '_jsonb' AND NOT attisdropped)
       AND (SELECT relname FROM pg_class WHERE oid = t) <> '_ferretdb_database_metadata' THEN
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> ''_id'') jsonb_path_ops) WITH (fastupdate = off)', t);
    END IF;
  END LOOP;
END
$fn$;
CREATE EVENT TRIGGER ferretdb_id_gin ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION public.ferretdb_id_gin();
`;

/** `ownGroup`: a process group of its own (npm start: a terminal's Ctrl-C then leaves it to us). */
export async function startPostgres(binDir: string, dir: string, ownGroup = false): Promise<LocalPostgres> {
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
    throw new LocalServiceError(`initdb failed: ${lastLine(err)}`);
  }
  const port = await freePort();
  const client = (tool: string, args: string[]) =>
    run(join(binDir, tool), ['--host=127.0.0.1', `--port=${port}`, '--username=postgres', ...args], {
      env,
      timeout: 10_000,
    });
  const psql = (command: string) =>
    client('psql', [
      `--dbname=${POSTGRES_DATABASE}`,
      '--no-psqlrc',
      '--quiet',
      '--set=ON_ERROR_STOP=1',
      `--command=${command}`,
    ]);
  let server: Launched | undefined;
  // SIGINT is PostgreSQL's fast shutdown: it ends the sessions instead of waiting for them.
  const stop = async (): Promise<void> => {
    await server?.stop('SIGINT');
  };
  /** Starts the server and waits until it answers `probe` (a client command). */
  const startServer = async (probe: () => Promise<unknown>): Promise<void> => {
    server = launch({
      name: 'postgres',
      command: join(binDir, 'postgres'),
      args: [
        '-D',
        dataDir,
        '-p',
        String(port),
        ...Object.entries(POSTGRES_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      ],
      cwd: dir,
      env,
      output: { file: join(dir, 'postgres.log') },
      ownGroup,
      ...asUser,
      ready: { probe: () => probe().then(() => true) },
      readyTimeoutMs: 30_000,
    });
    await server.ready;
  };
  // createdb both waits for the server to accept connections and makes FerretDB's database.
  await startServer(() => client('createdb', [POSTGRES_DATABASE]));
  try {
    await psql(FERRETDB_ID_GIN_SQL);
  } catch (err) {
    await stop();
    throw new LocalServiceError(`could not add FerretDB's _id index trigger: ${lastLine(err)}`);
  }
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/${POSTGRES_DATABASE}`,
    stop,
    async start() {
      if (!server?.running()) await startServer(() => psql('SELECT 1'));
    },
  };
}
