// Folders of local runs whose owner is gone: a test run stopped by Ctrl-C (vitest exits without
// its teardown), a killed `npm start`, a SIGKILLed bench. Each left its stores' folder in the
// temporary directory (80–290 MB with PostgreSQL's cluster) and its compiled copy under
// node_modules/.cache, and a run killed outright also left Redis, PostgreSQL and FerretDB
// running. A folder is stamped with its owner (pid and the kernel's start time of that process,
// so a pid used again is not taken for it); the next run removes every folder of its kind whose
// owner no longer runs, after stopping the processes that still work in it. A folder without a
// stamp (an older layout, or one being made this instant) is left alone.
import { readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const OWNER_FILE = 'owner.json';

interface Owner {
  pid: number;
  /** The process's start time (ticks after boot, /proc/<pid>/stat), or null where /proc cannot say. */
  started: string | null;
}

async function startTimeOf(pid: number): Promise<string | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
}

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stamps `dir` as this process's. */
export async function stampOwner(dir: string): Promise<void> {
  const owner: Owner = { pid: process.pid, started: await startTimeOf(process.pid) };
  await writeFile(join(dir, OWNER_FILE), JSON.stringify(owner));
}

/** Whether the owner of a stamp still runs; true when the stamp cannot be read as one. */
async function ownerRuns(dir: string): Promise<boolean> {
  let owner: Owner;
  try {
    owner = JSON.parse(await readFile(join(dir, OWNER_FILE), 'utf8')) as Owner;
  } catch {
    return true;
  }
  if (!Number.isInteger(owner.pid) || owner.pid <= 0) return true;
  if (owner.started === null) return exists(owner.pid);
  return (await startTimeOf(owner.pid)) === owner.started;
}

/**
 * The processes working in `dir`: their working directory inside it (Redis and PostgreSQL change
 * into their data folders) or an argument naming a path inside it (FerretDB's --state-dir, a
 * child running the compiled copy's script). Only where /proc is readable; none elsewhere.
 */
async function processesIn(dir: string): Promise<number[]> {
  const found: number[] = [];
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((d) => /^\d+$/.test(d));
  for (const pid of pids.map(Number)) {
    if (pid === process.pid) continue;
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => '');
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const inside = cwd === dir || cwd.startsWith(`${dir}/`);
    const named = cmdline
      .split('\0')
      .slice(1)
      .some((arg) => arg.startsWith(`${dir}/`) || arg.startsWith(`--state-dir=${dir}/`));
    if (inside || named) found.push(pid);
  }
  return found;
}

/**
 * Removes the folders in `parent` named `prefix…` whose stamped owner no longer runs: first the
 * processes still working in one are stopped (SIGKILL: what they hold is as throwaway as the
 * folder), then the folder goes. Returns the folders removed. A folder that cannot be removed is
 * left for a later run; this never fails the run that calls it.
 */
export async function removeAbandoned(parent: string, prefix: string): Promise<string[]> {
  const removed: string[] = [];
  const names = (await readdir(parent).catch(() => [] as string[])).filter((n) => n.startsWith(prefix));
  for (const name of names) {
    const dir = join(parent, name);
    if (await ownerRuns(dir)) continue;
    try {
      const left = await processesIn(dir);
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile, or not ours to signal
        }
      }
      for (let i = 0; i < 50 && (await processesIn(dir)).length > 0; i++) await sleep(100);
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // left for a later run
    }
  }
  return removed;
}
