import { type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitOf as exitOfChild, launch, type Output } from '../../scripts/local/launcher.js';
import { procfileTsx } from '../../scripts/local/procfile.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The real worker entry (workers/main.ts) as a child process, as the Procfile runs it; its output
 * to our stderr, or where `output` says (a file a test reads back).
 */
export function startWorkerProcess(env: Record<string, string>, output?: Output): ChildProcess {
  const declared = procfileTsx('worker');
  return launch({
    name: 'worker child',
    command: process.execPath,
    args: declared.args,
    cwd: root,
    env: { ...process.env, ...env, LOG_LEVEL: 'warn', ...declared.env },
    output: output ?? { prefix: '[worker child] ', to: 'stderr' },
  }).child;
}

/** Resolves with the exit code and signal. */
export async function exitOf(
  child: ChildProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return exitOfChild(child);
}
