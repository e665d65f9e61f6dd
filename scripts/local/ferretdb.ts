// FerretDB 1.24.2 (MongoDB's wire protocol over PostgreSQL): found or built with Go, and
// started on a free 127.0.0.1 port over a PostgreSQL URL.
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { restartable } from './launcher.js';
import { isExecutable, lastLine, LocalServiceError, run, which, type Say } from './install.js';
import { freePort } from './ports.js';

export const FERRETDB_VERSION = 'v1.24.2';
const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';

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
      'FerretDB is not installed and Go is missing, so it cannot be built. Install Go 1.24+ or set MONGODB_URI ' +
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
    say(`go install did not finish (${lastLine(err)}); building the same module from source ...`);
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

export interface LocalFerretDbProcess {
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/**
 * Go's collector target for the FerretDB we start, unless GOGC is set already. FerretDB's live
 * heap is a few MB and every command allocates and drops its reply, so at Go's default (100: a
 * collection each time the heap doubles) it collects several times a second under load. With
 * `GODEBUG=gctrace=1` over one intake-cost bench (2026-12-05): 485 collections and 4.3 s of
 * collector CPU at 100, 100 collections and 1.1 s at 400, its heap goal at most 15 and 38 MB.
 * Alternated with the default in the same bench, FerretDB's CPU per call fell by a tenth to a
 * fifth (docs/performance.md), its largest resident size rose from 47 MB to 72-79 MB; 800 saved no
 * more and took 110 MB.
 */
export const FERRETDB_GOGC = '400';

/**
 * Where the FerretDB we start serves Go's profiles (`/debug/pprof/`, its metrics and its debug
 * archive): `FERRETDB_DEBUG_ADDR` (host:port, on the loopback only: they show its memory and
 * its queries' parameters), else nowhere. For a look at where its CPU goes under a bench, as in
 * docs/performance.md: `go tool pprof -top http://127.0.0.1:<port>/debug/pprof/profile?seconds=15`.
 * A fixed port (0 would be one nobody is told), so for a run that starts one FerretDB, as a bench
 * does: a second one started with the same address exits, its debug port taken (npm test starts
 * several).
 */
export function ferretDebugAddr(env: NodeJS.ProcessEnv = process.env): string {
  const asked = env.FERRETDB_DEBUG_ADDR;
  if (asked === undefined || asked === '' || asked === '-') return '-';
  const match = /^(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})$/.exec(asked);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65_535) {
    throw new LocalServiceError(
      `FERRETDB_DEBUG_ADDR must be a loopback host:port, port 1-65535 (127.0.0.1:6060, localhost:6060 or [::1]:6060), not ${JSON.stringify(asked)}: ` +
        "FerretDB's debug handler shows its memory and its queries to whoever reaches it.",
    );
  }
  return asked;
}

/** `ownGroup`: a process group of its own (npm start: a terminal's Ctrl-C then leaves it to us). */
export async function startFerretDb(
  bin: string,
  dir: string,
  postgresUrl: string,
  ownGroup = false,
): Promise<LocalFerretDbProcess> {
  const port = await freePort();
  const debugAddr = ferretDebugAddr();
  const { start, stop } = restartable({
    name: 'ferretdb',
    command: bin,
    args: [
      '--handler=postgresql',
      `--postgresql-url=${postgresUrl}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--telemetry=disable',
      `--debug-addr=${debugAddr}`,
      `--state-dir=${dir}`,
      '--log-level=error',
    ],
    env: { ...process.env, GOGC: process.env.GOGC ?? FERRETDB_GOGC },
    ownGroup,
    ready: { port },
    readyTimeoutMs: 30_000,
  });
  await start();
  return { port, stop, start };
}
