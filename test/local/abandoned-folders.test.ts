// A run that ends without its clean-up (Ctrl-C on `npm test`: vitest exits without its teardown;
// a SIGKILL) leaves its stores' folder in the temporary directory, its compiled copy, and when
// killed outright its Redis, PostgreSQL and FerretDB running. The next run removes what such runs
// left: the processes working in a folder whose stamped owner is gone, then the folder; a live
// run's folder and an unstamped one are left alone.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject, describe, expect, it } from 'vitest';
import { removeAbandoned, stampOwner } from '../../scripts/local/abandoned.js';
import { startLocalServices } from '../../scripts/local/services.js';
import { eventually } from '../helpers/eventually.js';

/** Whether a Redis at 127.0.0.1:port answers PING. */
const redisAnswers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(2000);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The stores' folders in the temporary directory stamped by `pid`. */
const foldersOf = (pid: number): string[] =>
  readdirSync(tmpdir())
    .filter((name) => name.startsWith('intake-local-'))
    .map((name) => join(tmpdir(), name))
    .filter((dir) => {
      try {
        return (JSON.parse(readFileSync(join(dir, 'owner.json'), 'utf8')) as { pid: number }).pid === pid;
      } catch {
        return false;
      }
    });

/** A process sleeping with its working directory in `dir`, as a store in its data folder. */
const sleeperIn = (dir: string): ChildProcess => spawn('sleep', ['600'], { cwd: dir, stdio: 'ignore' });

describe('folders left by runs that ended without their clean-up', () => {
  it("a killed run's Redis is stopped and its folder removed; the live run's stores are untouched", async () => {
    // A run of its own that starts a local Redis (MongoDB given, so no FerretDB) and is then
    // killed outright, as a SIGKILL or a crash would: its Redis runs on, its folder stays.
    const run = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import('./scripts/local/services.ts').then(async ({ startLocalServices }) => {
          const local = await startLocalServices({ mongodbUri: 'mongodb://127.0.0.1:9/x' }, () => {});
          console.log(local.redisUrl);
          setInterval(() => {}, 60_000);
        });`,
      ],
      // A process group of its own, so that whatever fails below, the group (the run and its Redis)
      // is killed at the end; the test itself kills the run alone, as a crash would end it.
      { stdio: ['ignore', 'pipe', 'inherit'], detached: true },
    );
    let folder: string | undefined;
    try {
      const url = await new Promise<string>((resolve, reject) => {
        run.stdout!.on('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
        run.on('exit', (code) => reject(new Error(`the run exited with ${code} before its Redis was up`)));
      });
      const port = Number(new URL(url).port);
      [folder] = foldersOf(run.pid!);
      expect(folder, 'the run stamped its folder').toBeDefined();
      run.kill('SIGKILL');
      await eventually(async () => expect(alive(run.pid!)).toBe(false));
      expect(await redisAnswers(port), 'its Redis outlives it').toBe(true);

      // The next run to start local stores (here one of its own Redis, stopped again).
      const next = await startLocalServices({ mongodbUri: 'mongodb://127.0.0.1:9/x' }, () => {});
      await next.stop();

      expect(existsSync(folder!)).toBe(false);
      expect(await redisAnswers(port)).toBe(false);
      // This test run's own stores (their owner, vitest, runs) answer as before.
      expect(await redisAnswers(Number(new URL(inject('redisUrl')).port))).toBe(true);
    } finally {
      // Whatever failed above, the run of its own and its Redis do not outlive the test.
      try {
        process.kill(-run.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
      if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);

  it('removes a folder whose owner is gone or whose pid now names another process; keeps the rest', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'abandoned-test-'));
    const sleepers: ChildProcess[] = [];
    try {
      const folder = (name: string) => {
        const dir = join(parent, name);
        mkdirSync(dir);
        return dir;
      };
      // Owned by a process that has exited.
      const gone = folder('run-gone');
      const exited = spawnSync(process.execPath, ['-e', '0']);
      writeFileSync(join(gone, 'owner.json'), JSON.stringify({ pid: exited.pid, started: '1' }));
      const working = sleeperIn(gone);
      sleepers.push(working);
      // Stamped by this process's pid, but another start time: the pid was used again.
      const reused = folder('run-reused');
      writeFileSync(join(reused, 'owner.json'), JSON.stringify({ pid: process.pid, started: '1' }));
      // Owned by this process, which runs.
      const live = folder('run-live');
      await stampOwner(live);
      const liveSleeper = sleeperIn(live);
      sleepers.push(liveSleeper);
      // No stamp: an older layout, or a folder being made this instant.
      const unstamped = folder('run-unstamped');

      const removed = await removeAbandoned(parent, '');

      expect(removed.sort()).toEqual([gone, reused].sort());
      expect(existsSync(gone)).toBe(false);
      expect(existsSync(reused)).toBe(false);
      expect(existsSync(live)).toBe(true);
      expect(existsSync(unstamped)).toBe(true);
      // The process still working in the abandoned folder was stopped; the live one's was not.
      await eventually(async () => expect(working.signalCode).toBe('SIGKILL'));
      expect(alive(liveSleeper.pid!)).toBe(true);
    } finally {
      for (const sleeper of sleepers) sleeper.kill('SIGKILL');
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
