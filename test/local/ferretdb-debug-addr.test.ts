// The FerretDB that npm start, npm test and the benchmarks start serves Go's profiles only when
// asked (FERRETDB_DEBUG_ADDR), and only on the loopback: its debug handler shows its memory and
// its queries to whoever reaches it. Read from the started process's command line and its port.
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ferretDebugAddr } from '../../scripts/local/ferretdb.js';
import { freePort } from '../../scripts/local/ports.js';
import { startedFerretDbPid } from '../helpers/started-ferretdb.js';

const cleanup: Array<() => Promise<unknown>> = [];
const given = process.env.FERRETDB_DEBUG_ADDR;
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
  if (given === undefined) delete process.env.FERRETDB_DEBUG_ADDR;
  else process.env.FERRETDB_DEBUG_ADDR = given;
});

/** Starts a FerretDB; its command line's arguments. */
async function startedArgs(): Promise<string[]> {
  const pid = await startedFerretDbPid(cleanup);
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
}

describe("the local FerretDB's debug handler", () => {
  it('is off unless FERRETDB_DEBUG_ADDR asks for it', async () => {
    delete process.env.FERRETDB_DEBUG_ADDR;
    expect(await startedArgs()).toContain('--debug-addr=-');
  });

  it("serves Go's pprof handler at FERRETDB_DEBUG_ADDR", async () => {
    const addr = `127.0.0.1:${await freePort()}`;
    process.env.FERRETDB_DEBUG_ADDR = addr;
    expect(await startedArgs()).toContain(`--debug-addr=${addr}`);
    let answer: Response | undefined;
    for (let i = 0; i < 50 && answer === undefined; i++) {
      answer = await fetch(`http://${addr}/debug/pprof/cmdline`).catch(() => undefined);
      if (answer === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer?.status).toBe(200);
    expect(await answer!.text()).toContain('ferretdb');
  });

  it('takes a loopback address only, and says why otherwise', () => {
    expect(ferretDebugAddr({})).toBe('-');
    expect(ferretDebugAddr({ FERRETDB_DEBUG_ADDR: '127.0.0.1:6060' })).toBe('127.0.0.1:6060');
    expect(ferretDebugAddr({ FERRETDB_DEBUG_ADDR: 'localhost:6060' })).toBe('localhost:6060');
    expect(ferretDebugAddr({ FERRETDB_DEBUG_ADDR: '[::1]:6060' })).toBe('[::1]:6060');
    for (const bad of [
      '0.0.0.0:6060',
      ':6060',
      '10.0.0.5:6060',
      'example.com:6060',
      '127.0.0.1',
      '127.0.0.1:99999',
      '127.0.0.1:0',
    ]) {
      expect(() => ferretDebugAddr({ FERRETDB_DEBUG_ADDR: bad }), bad).toThrow(/loopback host:port/);
    }
  });
});
