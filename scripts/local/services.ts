// Local Redis and FerretDB for `npm start` and `npm test` when REDIS_URL / MONGODB_URI are
// unset: find or install them, start them on free 127.0.0.1 ports with data in a temporary
// folder, and stop them on exit. Production never runs this.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile, chmod, access } from 'node:fs/promises';
import { constants } from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
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
  stop(): Promise<void>;
}

export interface LocalRedis {
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startRedis(bin: string, dir: string): Promise<LocalRedis> {
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
        'no',
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

async function startFerretDb(bin: string, dir: string): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = join(dir, 'data');
  await mkdir(dataDir, { recursive: true });
  const child = spawn(
    bin,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${dataDir}/`,
      `--listen-addr=127.0.0.1:${port}`,
      '--telemetry=disable',
      '--debug-addr=-',
      `--state-dir=${dir}`,
      '--log-level=error',
    ],
    { stdio: 'ignore' },
  );
  await waitForPort(port, child, 'ferretdb');
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Uses REDIS_URL / MONGODB_URI when given; starts local servers for whichever is missing. */
export async function startLocalServices(
  given: { redisUrl?: string; mongodbUri?: string },
  say: Say = (line) => process.stderr.write(`[local] ${line}\n`),
): Promise<LocalServices> {
  const dir = await mkdtemp(join(tmpdir(), 'intake-local-'));
  const stops: Array<() => Promise<void>> = [];
  let redisUrl = given.redisUrl;
  let mongodbUri = given.mongodbUri;
  let redis: LocalRedis | undefined;
  try {
    if (!redisUrl) {
      const bin = await ensureRedisServer(say);
      await mkdir(join(dir, 'redis'));
      redis = await startRedis(bin, join(dir, 'redis'));
      stops.push(redis.stop);
      redisUrl = `redis://127.0.0.1:${redis.port}`;
    }
    if (!mongodbUri) {
      const bin = await ensureFerretDb(say);
      await mkdir(join(dir, 'ferretdb'));
      const ferret = await startFerretDb(bin, join(dir, 'ferretdb'));
      stops.push(ferret.stop);
      mongodbUri = `mongodb://127.0.0.1:${ferret.port}/intake`;
    }
  } catch (err) {
    await Promise.allSettled(stops.map((s) => s()));
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    redisUrl,
    mongodbUri,
    ...(redis === undefined ? {} : { redis }),
    async stop() {
      await Promise.allSettled(stops.reverse().map((s) => s()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
