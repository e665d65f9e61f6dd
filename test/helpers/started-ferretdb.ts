// A local FerretDB started as npm start, npm test and the benchmarks start theirs, for the tests
// that read what the started process was given (its environment, its command line). No
// PostgreSQL behind it: it listens first, and these tests never send it a command.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { descendants } from '../../bench/lib/measure.js';
import { ensureFerretDb, startFerretDb } from '../../scripts/local/ferretdb.js';

/** Our descendants whose command is `ferretdb`. */
const ferretPids = () => [...descendants()].filter(([, name]) => name === 'ferretdb').map(([pid]) => pid);

/** Starts one FerretDB (its stop and its folder's removal pushed on `cleanup`); its process id. */
export async function startedFerretDbPid(cleanup: Array<() => Promise<unknown>>): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'ferretdb-started-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const before = new Set(ferretPids());
  const ferret = await startFerretDb(await ensureFerretDb(() => {}), dir, 'postgres://127.0.0.1:1/none');
  cleanup.push(() => ferret.stop());
  const started = ferretPids().filter((pid) => !before.has(pid));
  expect(started).toHaveLength(1);
  return started[0]!;
}
