// `npm start` stopped as a terminal stops it (Ctrl-C: SIGINT to the whole foreground process
// group) or as a process manager does (SIGTERM to the group): the web and worker processes,
// then FerretDB, PostgreSQL and Redis are stopped, their temporary folder is removed, and the
// run exits 0 without a stack trace. The web runs the service compiled for the run (with source
// maps), not through tsx, and that copy goes at the stop too.
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';
import { COMPILED_DIR_ENV } from '../../scripts/local/compiled.js';
import { launch, type Launched } from '../../scripts/local/launcher.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The command line and environment of each process in process group `group`. */
async function processesOfGroup(group: number): Promise<Array<{ args: string[]; environ: string[] }>> {
  const found: Array<{ args: string[]; environ: string[] }> = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== group) continue;
      const [cmdline, environ] = await Promise.all(
        ['cmdline', 'environ'].map((f) => readFile(`/proc/${pid}/${f}`, 'utf8')),
      );
      found.push({ args: cmdline!.split('\0'), environ: environ!.split('\0') });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('npm start', () => {
  // The two runs share nothing (each its own folder, ports and stores): side by side.
  it.concurrent.for(['SIGINT', 'SIGTERM'] as const)(
    '%s to its process group: exit 0, no stack trace, no temporary folder left',
    { timeout: 300_000 },
    async (signal, { expect, onTestFinished }) => {
      const started: { run?: Launched } = {};
      const dir = await mkdtemp(join(tmpdir(), 'npm-start-'));
      onTestFinished(async () => {
        // A failed test still stops what it started: the stores run in process groups of their
        // own, so only `npm start`'s own stop reaches them.
        const run = started.run;
        if (run?.running()) {
          process.kill(-run.pid!, 'SIGTERM');
          await run.stop('SIGTERM', 60_000);
        }
        await rm(dir, { recursive: true, force: true });
      });
      // Its own temporary folder, so that what it leaves behind (nothing) can be seen.
      const temp = join(dir, 'tmp');
      await mkdir(temp);
      // As /tmp lets it: PostgreSQL, run as its own user under root, passes through to its folder.
      for (const d of [dir, temp]) await chmod(d, 0o711);
      const logFile = join(dir, 'output.log');
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', TMPDIR: temp };
      // As a user's shell has it: no stores, no key, and no compiled copy of the test run's
      // (npm start makes its own).
      for (const name of [
        'REDIS_URL',
        'MONGODB_URI',
        'ADMIN_API_KEY',
        'NODE_OPTIONS',
        COMPILED_DIR_ENV,
        'NODE_COMPILE_CACHE',
      ])
        delete env[name];
      const output = (): Promise<string> => readFile(logFile, 'utf8').catch(() => '');
      const run = launch({
        name: 'npm start',
        command: process.execPath,
        args: [join(root, 'scripts', 'local', 'bootstrap.mjs'), 'start'],
        cwd: root,
        env,
        output: { file: logFile },
        // As a terminal's foreground job: the signal goes to every process of the group.
        ownGroup: true,
        ready: { probe: async () => (await output()).includes('Intake Service is running.') },
        // PostgreSQL, FerretDB and Redis, then the web and worker, twice side by side:
        // about 12 s on an idle two-core machine, several times that on a loaded one. Only a hang
        // guard.
        readyTimeoutMs: 180_000,
      });
      started.run = run;
      await run.ready;
      // (tsx keeps its cache there too.)
      const stores = async () => (await readdir(temp)).filter((f) => f.startsWith('intake-local-'));
      expect(await stores()).toHaveLength(1);
      // The web runs the run's compiled copy, with its source maps, not the TypeScript through tsx.
      const web = (await processesOfGroup(run.pid!)).find((p) =>
        p.args.some((a) => a.endsWith('/api/server.js')),
      );
      expect(web, 'a web process in the group').toBeDefined();
      const script = web!.args.find((a) => a.endsWith('/api/server.js'))!;
      const copy = dirname(dirname(script));
      expect(copy.startsWith(join(root, 'node_modules', '.cache', 'intake-compiled', 'start-'))).toBe(true);
      expect(web!.args).not.toContain('tsx');
      expect(existsSync(`${script}.map`), 'a source map beside the script').toBe(true);
      expect(web!.environ.find((e) => e.startsWith('NODE_OPTIONS='))).toContain('--enable-source-maps');

      process.kill(-run.pid!, signal);
      const exit = await run.exited;

      const text = await output();
      expect(exit, text).toEqual({ code: 0, signal: null });
      expect(text).toContain('[start] stopped');
      expect(text).not.toMatch(/Error|\n\s+at /);
      expect(await stores()).toEqual([]);
      expect(existsSync(copy), `the compiled copy ${copy} is removed`).toBe(false);
    },
  );
});
