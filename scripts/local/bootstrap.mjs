#!/usr/bin/env node
// `npm start` and `npm test` begin here, before any dependency is installed: install the npm
// packages when they are missing or were installed from another package-lock.json, then hand over to the
// TypeScript entry (start) or to vitest (test). Redis, FerretDB and Chromium are set up by
// those (scripts/local/services.ts), since they need the packages installed here.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const [mode, ...rest] = process.argv.slice(2);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// The lock file's content, not its date, says whether node_modules is current: a checkout or a
// `touch` changes the date of an unchanged lock file, and `npm ci` would then wipe a good install.
const lock = join(root, 'package-lock.json');
const stamp = join(root, 'node_modules', '.intake-lock-sha256');
const lockHash = createHash('sha256').update(readFileSync(lock)).digest('hex');

function dependenciesCurrent() {
  if (existsSync(stamp)) return readFileSync(stamp, 'utf8').trim() === lockHash;
  // An install made before the stamp existed: npm's own record, no older than the lock file.
  const npmRecord = join(root, 'node_modules', '.package-lock.json');
  return existsSync(npmRecord) && statSync(npmRecord).mtimeMs >= statSync(lock).mtimeMs;
}

if (!dependenciesCurrent()) {
  process.stderr.write('[setup] installing npm packages (npm ci) ...\n');
  const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stderr.write(
      '[setup] npm ci failed; see above. Node 20.19+ and the npm registry are required.\n',
    );
    process.exit(result.status ?? 1);
  }
}
if (!existsSync(stamp) || readFileSync(stamp, 'utf8').trim() !== lockHash)
  writeFileSync(stamp, `${lockHash}\n`);

const commands = {
  start: [process.execPath, ['--import', 'tsx', join(root, 'scripts', 'local', 'start.ts'), ...rest]],
  test: [process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...rest]],
};
const command = commands[mode];
if (command === undefined) {
  process.stderr.write('usage: node scripts/local/bootstrap.mjs start|test [args]\n');
  process.exit(2);
}
const child = spawn(command[0], command[1], { cwd: root, stdio: 'inherit' });
// A terminal's Ctrl-C reaches the child too (same process group); passing it on again is
// harmless, and it makes `kill <this pid>` stop everything the same way.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
