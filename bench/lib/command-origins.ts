// The bench's side of bench/lib/command-origins.mjs: the environment that preloads it into the
// web and worker processes, a snapshot of their counts (SIGUSR2, then the files they write), and
// the table of a round's MongoDB calls and Redis commands per analysed call by process, method,
// collection and origin in the service's code.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { atExit, root } from './stack.js';

export type OriginCounts = Map<string, number>;

/** A folder for the snapshots, removed at exit, and the variables that load the counter with it. */
export function originsEnv(): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'bench-origins-'));
  atExit(async () => rmSync(dir, { recursive: true, force: true }));
  const module = pathToFileURL(join(root, 'bench', 'lib', 'command-origins.mjs')).href;
  const inherited = process.env.NODE_OPTIONS ?? '';
  return {
    dir,
    env: { BENCH_ORIGINS_DIR: dir, NODE_OPTIONS: `${inherited} --import="${module}"`.trim() },
  };
}

const taken = new Map<number, number>();

/** Each process's counts so far, keyed `<name>\t<method>\t<collection>\t<origin>`. */
export async function snapshotOrigins(dir: string, named: Map<number, string>): Promise<OriginCounts> {
  const out: OriginCounts = new Map();
  for (const [pid, name] of named) {
    const n = (taken.get(pid) ?? 0) + 1;
    taken.set(pid, n);
    const file = join(dir, `${pid}-${n}.json`);
    process.kill(pid, 'SIGUSR2');
    const until = Date.now() + 10_000;
    while (!existsSync(file)) {
      if (Date.now() > until) throw new Error(`command origins: ${name} (pid ${pid}) wrote no ${file}`);
      await sleep(20);
    }
    // Written with one synchronous write: complete once it parses.
    let counts: Record<string, number> | undefined;
    while (counts === undefined) {
      try {
        counts = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
      } catch {
        if (Date.now() > until) throw new Error(`command origins: ${file} is not readable`);
        await sleep(20);
      }
    }
    for (const [key, value] of Object.entries(counts)) out.set(`${name}\t${key}`, value);
  }
  return out;
}

/** The calls between two snapshots, per analysed call, busiest first (a line each). */
export function originsTable(before: OriginCounts, after: OriginCounts, calls: number): string {
  const rows = [...after.entries()]
    .map(([key, n]) => [key.split('\t'), (n - (before.get(key) ?? 0)) / calls] as const)
    .filter(([, n]) => n >= 0.005)
    .sort((a, b) => b[1] - a[1]);
  const line = ([[name, method, collection, origin], n]: (typeof rows)[number]): string =>
    `    ${n.toFixed(2).padStart(5)}  ${name!.padEnd(7)} ${method!.padEnd(16)} ${collection!.padEnd(18)} ${origin}`;
  const isRedis = ([[, method]]: (typeof rows)[number]): boolean => method!.startsWith('redis.');
  const section = (title: string, of: (typeof rows)[number][]): string[] => [
    `  ${title}: ${of.reduce((a, [, n]) => a + n, 0).toFixed(1)}`,
    ...of.map(line),
  ];
  return [
    ...section(
      'MongoDB calls per call by origin',
      rows.filter((r) => !isRedis(r)),
    ),
    ...section(
      "Redis commands per call by origin (BullMQ's own included; a pipelined one shares its write)",
      rows.filter(isRedis),
    ),
  ].join('\n');
}
