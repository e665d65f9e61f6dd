#!/usr/bin/env node
// `npm start` and `npm test` begin here, under whatever node the machine has, before any
// dependency is installed (so: plain JavaScript that Node 18 can read). First the pinned Node
// (.nvmrc; scripts/node-runtime/ensure.mjs fetches it from the npm registry when this is not it):
// this script runs itself again under it, with its folder first on PATH, so that everything below
// (npm ci, vitest, tsx, the processes the tests start by `node` or process.execPath) runs on it.
// Then the npm packages, when they are missing or were installed from another package-lock.json
// or under another Node major, then the TypeScript entry (start) or vitest (test). Redis,
// FerretDB and Chromium are set up by those (scripts/local/services.ts), since they need the
// packages installed here.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNodeRuntime } from '../node-runtime/ensure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const [mode, ...rest] = process.argv.slice(2);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
if (mode !== 'start' && mode !== 'test') {
  process.stderr.write('usage: node scripts/local/bootstrap.mjs start|test [args]\n');
  process.exit(2);
}

/** Runs the command with this terminal, passes signals on, and exits as it exits. */
function handOver(command, args, env) {
  const child = spawn(command, args, { cwd: root, stdio: 'inherit', env });
  // A terminal's Ctrl-C reaches the child too (same process group); passing it on again is
  // harmless, and it makes `kill <this pid>` stop everything the same way.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

let runtime;
try {
  runtime = ensureNodeRuntime();
} catch (err) {
  process.stderr.write(`[setup] ${err.message}\n`);
  process.exit(1);
}
const path = process.env.PATH ?? '';
const env = { ...process.env };
if (path.split(delimiter)[0] !== runtime.binDir) env.PATH = `${runtime.binDir}${delimiter}${path}`;
if (runtime.node !== process.execPath) {
  // npm sets these to the node it ran under; node-gyp reads npm_config_nodedir for the headers
  // (the package ships them; a machine's npmrc may name another Node's).
  if (env.NODE !== undefined) env.NODE = runtime.node;
  if (env.npm_node_execpath !== undefined) env.npm_node_execpath = runtime.node;
  if (runtime.nodeDir !== undefined) env.npm_config_nodedir = runtime.nodeDir;
  handOver(runtime.node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], env);
} else {
  main();
}

function main() {
  // The lock file's content, not its date, says whether node_modules is current (a checkout or
  // a `touch` changes the date of an unchanged lock file, and `npm ci` would then wipe a good
  // install), and so does the Node major it was installed under (packages may install
  // differently per major): a stamp from another lock or major, or from before the major was
  // recorded, means install again.
  const stamp = join(root, 'node_modules', '.intake-lock-sha256');
  const lock = join(root, 'package-lock.json');
  const lockHash = createHash('sha256').update(readFileSync(lock)).digest('hex');
  const wanted = `${lockHash} node${process.versions.node.split('.')[0]}`;
  const current = () => {
    if (existsSync(stamp)) return readFileSync(stamp, 'utf8').trim() === wanted;
    // No stamp: an install made by `npm ci` itself (as .ci/run does, on the pinned Node), taken
    // as current when npm's own record is no older than the lock file.
    const npmRecord = join(root, 'node_modules', '.package-lock.json');
    return existsSync(npmRecord) && statSync(npmRecord).mtimeMs >= statSync(lock).mtimeMs;
  };
  if (!current()) {
    process.stderr.write(`[setup] installing npm packages (npm ci, Node ${process.versions.node}) ...\n`);
    const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit', env });
    if (result.status !== 0) {
      process.stderr.write('[setup] npm ci failed; see above. The npm registry is required.\n');
      process.exit(result.status ?? 1);
    }
  }
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8').trim() !== wanted)
    writeFileSync(stamp, `${wanted}\n`);

  const args = {
    start: ['--import', 'tsx', join(root, 'scripts', 'local', 'start.ts'), ...rest],
    test: [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...rest],
  };
  handOver(process.execPath, args[mode], env);
}
