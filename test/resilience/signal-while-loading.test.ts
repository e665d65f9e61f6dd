// A SIGTERM that reaches the real worker (workers/main.ts) or web (api/server.ts) process while it
// is still loading its modules ends it with exit 0 (core/platform/held-signals.ts): at once if
// the signal is handled while it loads, else through the real stop, begun as soon as it is in
// place. Node's default would kill it by the signal: the chaos run SIGTERMs a worker restarted a
// moment before, and "exit 0 within 25 s" then failed.
//
// The moment is made, not guessed: a preload (test/helpers/slow-load.mjs) holds the loading of
// the module the entry imports after its first step (workers/worker-process.ts, api/web-process.ts)
// and says so on stderr; the test signals then. Before the holding, nothing caught SIGTERM there.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local/ports.js';
import { exitOf } from '../../scripts/local/launcher.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { QUEUE_NAMES } from '../../jobs/queues.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let stack: Stack;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await stack?.stop();
});

/** Starts an entry, sends SIGTERM while it loads `slow` (held by the preload), returns how it ended. */
async function termWhileLoading(entry: string, slow: string, env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', './test/helpers/slow-load.mjs', entry],
    {
      cwd: root,
      env: {
        ...process.env,
        ...stack.env,
        ...env,
        LOG_LEVEL: 'info',
        SLOW_LOAD_MODULE: slow,
        SLOW_LOAD_MS: '3000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = exitOf(child);
  const started = Date.now();
  while (!output.includes(`slow-load: `)) {
    if (child.exitCode !== null || Date.now() - started > 60_000) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  expect(output, 'the preload held the module').toContain(slow);
  const signalled = Date.now();
  child.kill('SIGTERM');
  const exit = await exited;
  return { exit, output, stopMs: Date.now() - signalled };
}

describe('a SIGTERM while the process is still loading', () => {
  it('ends the worker with exit 0 before it consumes any queue', async () => {
    const { exit, output, stopMs } = await termWhileLoading(
      'workers/main.ts',
      'workers/worker-process.ts',
      {},
    );
    console.log(`worker SIGTERMed while loading: exit ${JSON.stringify(exit)} ${stopMs} ms after the signal`);
    expect(exit, output).toEqual({ code: 0, signal: null });
    // Stopped while loading, or (the signal was delivered only once the loading ended: Node runs
    // no handler while the loader thread holds the main one) by the real stop, which then began
    // at once.
    expect(output).toMatch(/stopped while loading|"msg":"stopped"/);
    for (const name of QUEUE_NAMES) expect(await stack.services.queues[name].getWorkers()).toEqual([]);
  });

  it('ends the web process with exit 0 before it listens', async () => {
    const port = await freePort();
    const { exit, output } = await termWhileLoading('api/server.ts', 'api/web-process.ts', {
      PORT: String(port),
    });
    expect(exit, output).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/stopped while loading|"msg":"stopped"/);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });
});
