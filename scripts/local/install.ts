// What the local stores share: finding a program, installing a Debian package (as root), and
// the error that tells the user what to install or set instead.
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** A local store could not be found, installed or started; the message says what to do. */
export class LocalServiceError extends Error {}

export type Say = (line: string) => void;

export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function which(name: string): Promise<string | null> {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin', '/usr/local/bin'])) {
    if (dir && (await isExecutable(join(dir, name)))) return join(dir, name);
  }
  return null;
}

/**
 * Installs a Debian package with apt-get; `missing` says what to do instead where apt-get is
 * absent or we are not root.
 */
export async function aptInstall(pkg: string, missing: string, say: Say): Promise<void> {
  const apt = await which('apt-get');
  if (apt === null || process.getuid?.() !== 0) throw new LocalServiceError(missing);
  say(`installing ${pkg} with apt-get ...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run(apt, ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
  await run(apt, ['install', '-y', '--no-install-recommends', pkg], { env, maxBuffer: 64 * 1024 * 1024 });
}

/** The last line of a failed command's stderr (or its message). */
export function lastLine(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim().split('\n').pop() ?? '';
}
