// Schemathesis in a virtual environment under .local/fuzz-venv, installed only when missing.
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root, say } from './settings.js';

const run = promisify(execFile);
const SCHEMATHESIS_VERSION = '4.32.5';
const venv = join(root, '.local', 'fuzz-venv');
export const schemathesisBin = join(venv, 'bin', 'schemathesis');

async function installedVersion(): Promise<string | null> {
  try {
    const { stdout } = await run(schemathesisBin, ['--version'], { timeout: 60_000 });
    return /version\s+(\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

async function aptInstall(pkg: string): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  say(`installing ${pkg} with apt-get ...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await run('apt-get', ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
    await run('apt-get', ['install', '-y', '--no-install-recommends', pkg], {
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return true;
  } catch (err) {
    say(`apt-get install ${pkg} failed: ${(err as Error).message.split('\n')[0]}`);
    return false;
  }
}

export async function ensureSchemathesis(): Promise<void> {
  if ((await installedVersion()) === SCHEMATHESIS_VERSION) return;
  say(`installing Schemathesis ${SCHEMATHESIS_VERSION} into ${venv} ...`);
  await rm(venv, { recursive: true, force: true });
  const makeVenv = () => run('python3', ['-m', 'venv', venv], { maxBuffer: 16 * 1024 * 1024 });
  try {
    await makeVenv();
  } catch (err) {
    // Debian's python3 has venv without ensurepip until python3-venv is installed.
    await rm(venv, { recursive: true, force: true });
    const pkg = await debianVenvPackage();
    if (!(await aptInstall(pkg))) {
      throw new Error(
        `python3 -m venv failed (${(err as Error).message.split('\n')[0]}); install ${pkg} (Debian) and retry.`,
      );
    }
    await makeVenv();
  }
  await run(
    join(venv, 'bin', 'python'),
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      `schemathesis==${SCHEMATHESIS_VERSION}`,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
  );
  const version = await installedVersion();
  if (version !== SCHEMATHESIS_VERSION) {
    throw new Error(`pip installed Schemathesis but it reports ${version ?? 'nothing'}`);
  }
}

/** python3.11-venv for Python 3.11, else python3-venv. */
async function debianVenvPackage(): Promise<string> {
  try {
    const { stdout } = await run('python3', [
      '-c',
      'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")',
    ]);
    return `python${stdout.trim()}-venv`;
  } catch {
    return 'python3-venv';
  }
}
