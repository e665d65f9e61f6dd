// The fuzzer's Python environment: a virtual environment under .local/fuzz-venv made by one
// chosen interpreter and filled from scripts/fuzz/requirements.lock (every package pinned, with
// hashes: pip refuses a file whose hash differs). It is rebuilt when the lock file or the
// interpreter changes; both are recorded in the venv. Why this interpreter: docs/ci.md.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root, say } from './settings.js';

const run = promisify(execFile);
/** Debian's own interpreter, by path: not whichever python3 (pyenv's, say) is first on PATH. */
const PYTHON = process.env.FUZZ_PYTHON || '/usr/bin/python3';
const lockFile = join(root, 'scripts', 'fuzz', 'requirements.lock');
const venv = join(root, '.local', 'fuzz-venv');
const stampFile = join(venv, 'fuzz-env.json');
export const schemathesisBin = join(venv, 'bin', 'schemathesis');

interface Stamp {
  lockSha256: string;
  python: string;
}

/** What the venv must have been made from: the lock file's hash and the interpreter. */
async function wanted(): Promise<Stamp> {
  if (!existsSync(PYTHON)) {
    throw new Error(
      `${PYTHON} not found: install Debian's python3 and python3-venv (apt-get install python3 python3-venv), ` +
        'or set FUZZ_PYTHON to another CPython 3.11 interpreter',
    );
  }
  const { stdout } = await run(PYTHON, ['-c', 'import sys; print(sys.version.split()[0])']);
  const lockSha256 = createHash('sha256')
    .update(await readFile(lockFile))
    .digest('hex');
  return { lockSha256, python: `${await realpath(PYTHON)} ${stdout.trim()}` };
}

async function current(): Promise<Stamp | null> {
  try {
    return JSON.parse(await readFile(stampFile, 'utf8')) as Stamp;
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

async function makeVenv(): Promise<void> {
  const make = () => run(PYTHON, ['-m', 'venv', venv], { maxBuffer: 16 * 1024 * 1024 });
  try {
    await make();
  } catch (err) {
    // Debian's python3 has venv without ensurepip until python3-venv is installed.
    await rm(venv, { recursive: true, force: true });
    if (!(await aptInstall('python3-venv'))) {
      throw new Error(
        `${PYTHON} -m venv failed (${(err as Error).message.split('\n')[0]}); install python3-venv (Debian) and retry.`,
      );
    }
    await make();
  }
}

/** Makes the venv from the lock file unless it was already made from this lock and interpreter. */
export async function ensureSchemathesis(): Promise<void> {
  const want = await wanted();
  const have = await current();
  if (have?.lockSha256 === want.lockSha256 && have.python === want.python && existsSync(schemathesisBin)) {
    return;
  }
  say(
    `making ${venv} with ${want.python} from requirements.lock (sha256 ${want.lockSha256.slice(0, 12)}) ...`,
  );
  await rm(venv, { recursive: true, force: true });
  await makeVenv();
  // --require-hashes: every file must match the lock; --no-deps: nothing outside the lock;
  // --only-binary: wheels only, so no package's build script runs here.
  await run(
    join(venv, 'bin', 'python'),
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-input',
      '--require-hashes',
      '--no-deps',
      '--only-binary',
      ':all:',
      '-r',
      lockFile,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
  );
  // The lock is complete: pip check fails if a package needs one the lock left out.
  await run(join(venv, 'bin', 'python'), ['-m', 'pip', 'check', '--disable-pip-version-check']);
  await writeFile(stampFile, JSON.stringify(want));
}
