// The FerretDB that npm start, npm test, the benchmarks and the chaos run start collects its
// garbage less often than Go's default (GOGC=400, measured in docs/performance.md), unless the
// person running it chose a GOGC of their own. Read from the started process's environment.
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FERRETDB_GOGC } from '../../scripts/local/ferretdb.js';
import { startedFerretDbPid } from '../helpers/started-ferretdb.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** GOGC in the environment of the FerretDB this test starts. */
async function gogcOfStarted(): Promise<string | undefined> {
  const pid = await startedFerretDbPid(cleanup);
  const environ = await readFile(`/proc/${pid}/environ`, 'utf8');
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
