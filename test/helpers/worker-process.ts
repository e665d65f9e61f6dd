import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The real worker entry (workers/main.ts) as a child process, as the Procfile runs it. */
export function startWorkerProcess(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => process.stderr.write(`[worker child] ${chunk.toString()}`));
  }
  return child;
}

/** Resolves with the exit code and signal, and how long after `since` the process ended. */
export function exitOf(
  child: ChildProcess,
  since = Date.now(),
): Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resolve({ code: child.exitCode, signal: child.signalCode, afterMs: Date.now() - since });
    }
    child.once('exit', (code, signal) => resolve({ code, signal, afterMs: Date.now() - since }));
  });
}
