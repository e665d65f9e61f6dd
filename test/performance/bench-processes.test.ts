// What the bench counts as the stack's CPU (bench/lib/measure.ts, cpuByGroup), and the processes a
// scenario starts beside its app (bench/lib/stack.ts, adopt). A Node process is named `MainThread`
// since Node 24, so an unnamed Node child (the webhook-bodies scenario's bare server, left running
// into intake-cost) was counted in the stack's CPU a call under that name; only the processes a
// scenario names and the stores' servers are the stack's.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cpuByGroup, processCpuSeconds } from '../../bench/lib/measure.js';
import { createApp, type Proc, type Stores } from '../../bench/lib/stack.js';
import { launch } from '../../scripts/local/launcher.js';

let dir: string;
const children: ChildProcess[] = [];

/** A Node child that spins for `busyMs`, then waits to be killed. */
function busyNode(busyMs: number): ChildProcess {
  const child = spawn(
    process.execPath,
    ['-e', `const end = Date.now() + ${busyMs}; while (Date.now() < end); setInterval(() => {}, 1000);`],
    { stdio: 'ignore' },
  );
  children.push(child);
  return child;
}

/** `sleep` under another command name (a copy of the binary named `name`). */
async function sleeperNamed(name: string): Promise<ChildProcess> {
  const path = join(dir, name);
  await copyFile('/bin/sleep', path);
  const child = spawn(path, ['60'], { stdio: 'ignore' });
  children.push(child);
  return child;
}

/** What the kernel calls a process (its command name). */
const commOf = async (pid: number): Promise<string> => (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();

/** Waits until `pid` runs the program named `name` (a forked child bears its parent's name until it execs). */
async function runs(pid: number, name: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await commOf(pid).catch(() => '')) === name) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`process ${pid} never ran ${name}`);
}

/** Waits until `pid` has used at least `seconds` of CPU. */
async function usedAtLeast(pid: number, seconds: number): Promise<void> {
  for (let i = 0; i < 200 && !(processCpuSeconds(pid) >= seconds); i++)
    await new Promise((r) => setTimeout(r, 20));
  if (!(processCpuSeconds(pid) >= seconds)) throw new Error(`process ${pid} never used ${seconds} s of CPU`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bench-processes-'));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

describe('the stack a bench counts', () => {
  it('counts the named processes and the stores, and keeps an unnamed Node child apart', async () => {
    const web = busyNode(150);
    const stray = busyNode(150);
    const postgres = await sleeperNamed('postgres');
    const ferretdb = await sleeperNamed('ferretdb');
    await Promise.all([
      usedAtLeast(web.pid!, 0.05),
      usedAtLeast(stray.pid!, 0.05),
      runs(postgres.pid!, 'postgres'),
      runs(ferretdb.pid!, 'ferretdb'),
    ]);
    // The Node child has run its script, so it bears Node's own name by now.
    const strayName = await commOf(stray.pid!);

    const { stack, others } = cpuByGroup(new Map([[web.pid!, 'web']]));

    expect(stack.get('web')).toBeGreaterThanOrEqual(0.05);
    expect(stack.has('postgres')).toBe(true);
    expect(stack.has('ferretdb')).toBe(true);
    // Whatever this Node calls itself (`MainThread` on 24, `node` before), it is not the stack's.
    expect(stack.has(strayName)).toBe(false);
    expect(others.get(strayName)).toBeGreaterThanOrEqual(0.05);
  });
});

describe("a scenario's own process", () => {
  it("is stopped with the app's processes when adopted", async () => {
    const stores: Stores = {
      redisUrl: inject('redisUrl'),
      redisCluster: false,
      mongodbUri: inject('mongodbUri'),
      local: {} as Stores['local'],
      describe: async () => ({}),
    };
    const app = await createApp(stores, 'adopt');
    const child = launch({
      name: 'adopted',
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      output: 'ignore',
    });
    const proc: Proc = {
      name: 'adopted',
      pid: child.pid!,
      child: child.child,
      rss: () => 0,
      stop: async () => {
        await child.stop('SIGTERM', 5_000);
      },
    };
    app.adopt(proc);
    expect(child.running()).toBe(true);

    await app.close();

    expect(child.running()).toBe(false);
  });
});
