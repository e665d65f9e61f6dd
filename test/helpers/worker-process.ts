import { type ChildProcess } from 'node:child_process';
import { exitOf as exitOfChild, type Output } from '../../scripts/local/launcher.js';
import { launchAsProcfile } from '../../scripts/local/procfile.js';

/**
 * The real worker entry (workers/main.ts) as a child process, as the Procfile runs it; its output
 * to our stderr, or where `output` says (a file a test reads back).
 */
export function startWorkerProcess(env: Record<string, string>, output?: Output): ChildProcess {
  return launchAsProcfile(
    'worker',
    { ...process.env, ...env, LOG_LEVEL: 'warn' },
    {
      name: 'worker child',
      output: output ?? { prefix: '[worker child] ', to: 'stderr' },
    },
  ).child;
}

/** Resolves with the exit code and signal. */
export async function exitOf(
  child: ChildProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return exitOfChild(child);
}
