// The FerretDB that npm start, npm test, the benchmarks and the chaos run start collects its
// garbage less often than Go's default (GOGC=400, measured in docs/performance.md), unless the
// person running it chose a GOGC of their own. Read from the started process's environment.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { descendants } from '../../bench/lib/measure.js';
import { ensureFerretDb, FERRETDB_GOGC, startFerretDb } from '../../scripts/local/ferretdb.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Our descendants whose command is `ferretdb`. */
const ferretPids = () => [...descendants()].filter(([, name]) => name === 'ferretdb').map(([pid]) => pid);

/** GOGC in the environment of the FerretDB this test starts (no PostgreSQL: it listens first). */
async function gogcOfStarted(): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'ferretdb-gc-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const before = new Set(ferretPids());
  const ferret = await startFerretDb(await ensureFerretDb(() => {}), dir, 'postgres://127.0.0.1:1/none');
  cleanup.push(() => ferret.stop());
  const started = ferretPids().filter((pid) => !before.has(pid));
  expect(started).toHaveLength(1);
  const environ = await readFile(`/proc/${started[0]}/environ`, 'utf8');
  const entry = environ.split('\0').find((e) => e.startsWith('GOGC='));
  return entry?.slice('GOGC='.length);
}

describe("the local FerretDB's garbage collector", () => {
  const given = process.env.GOGC;
  afterEach(() => {
    if (given === undefined) delete process.env.GOGC;
    else process.env.GOGC = given;
  });

  it('collects at GOGC=400 when nobody chose otherwise', async () => {
    delete process.env.GOGC;
    expect(FERRETDB_GOGC).toBe('400');
    expect(await gogcOfStarted()).toBe('400');
  });

  it('keeps a GOGC the person running it set', async () => {
    process.env.GOGC = '150';
    expect(await gogcOfStarted()).toBe('150');
  });
});
