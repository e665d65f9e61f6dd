// The web, worker and release children of `npm test` and of `npm start` run compiled
// JavaScript, as the platform runs `dist/` (Procfile), not the TypeScript through tsx: a child
// loaded through tsx spent about a second more CPU starting (2.0–2.3 s against 1.1–1.3 s for the
// same modules compiled, measured on 2026-12-04), and the tests start dozens; one npm start's web
// took 5.3 s of CPU through tsx on a loaded machine. Each run compiles the sources once into a
// folder of its own (a concurrent run has its own) and names it in INTAKE_COMPILED_DIR;
// launchAsProcfile then runs a line's script from there.
//
// esbuild, as tsx does, one module per source file: the same layout as `npm run build`'s tsc
// output, with the same assets copied beside it (scripts/build/copy-assets.mjs).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeAbandoned, stampOwner } from './abandoned.js';
import { promisify } from 'node:util';

export const COMPILED_DIR_ENV = 'INTAKE_COMPILED_DIR';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** What `npm run build` compiles (tsconfig.build.json's include). */
const SOURCE_DIRS = ['api', 'core', 'jobs', 'workers', 'dashboard'];

async function sourcesIn(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

/**
 * A folder for a compiled copy: inside the repository's node_modules, so that the copy's bare
 * imports (koa, bullmq) resolve to the repository's packages as dist/'s do.
 */
export async function compiledDirFor(name: string): Promise<string> {
  const parent = join(root, 'node_modules', '.cache', 'intake-compiled');
  // The copies of runs that ended without removing theirs (scripts/local/abandoned.ts).
  await removeAbandoned(parent, '');
  const dir = join(parent, name);
  await mkdir(dir, { recursive: true });
  await stampOwner(dir);
  return dir;
}

/** Where the node processes of a run with the compiled copy `dir` keep V8's code cache (NODE_COMPILE_CACHE). */
export const compileCacheDirOf = (dir: string): string => join(dir, '.node-compile-cache');

/**
 * Compiles the service's sources into `outDir` (dist/'s layout) and copies their assets beside
 * them. `sourceMaps`: a map beside each module, for processes run with --enable-source-maps, whose
 * stack traces then name the TypeScript's files and lines (npm start: tsx did the same).
 */
export async function compileSources(outDir: string, options: { sourceMaps?: boolean } = {}): Promise<void> {
  const { build } = await import('esbuild');
  const entryPoints = (await Promise.all(SOURCE_DIRS.map(sourcesIn))).flat();
  await build({
    entryPoints: entryPoints.map((file) => join(root, file)),
    outbase: root,
    outdir: outDir,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    tsconfig: join(root, 'tsconfig.json'),
    logLevel: 'warning',
    ...(options.sourceMaps === true ? { sourcemap: 'linked' as const, sourcesContent: false } : {}),
  });
  await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build', 'copy-assets.mjs'), outDir]);
}

/**
 * A compiled copy for the run `name`, used by this process from now on: its folder (stamped, so a
 * run that dies leaves it to the next run's clean-up), the sources compiled into it, and the
 * variables that make this process's launches and its children use it: INTAKE_COMPILED_DIR, and
 * NODE_COMPILE_CACHE inside the copy (unless set), V8's code cache for every node process that
 * loads its modules. The folder goes if the compile fails. The caller removes it at its end.
 */
export async function useCompiledCopy(name: string, options: { sourceMaps?: boolean } = {}): Promise<string> {
  const dir = await compiledDirFor(name);
  try {
    await compileSources(dir, options);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  process.env[COMPILED_DIR_ENV] = dir;
  process.env.NODE_COMPILE_CACHE ??= compileCacheDirOf(dir);
  return dir;
}

/**
 * The compiled script for a Procfile line's `dist/...` script, when this process was given a
 * compiled copy (INTAKE_COMPILED_DIR) that has it; null otherwise (the caller runs the TypeScript).
 */
export function compiledScript(script: string): string | null {
  const dir = process.env[COMPILED_DIR_ENV];
  if (dir === undefined || dir === '' || !script.startsWith('dist/')) return null;
  const file = join(dir, script.slice('dist/'.length));
  return existsSync(file) ? file : null;
}

/**
 * node's arguments to run a source entry (`core/platform/db/release.ts`, relative to the
 * repository): its compiled module when this process was given a compiled copy, else the
 * TypeScript through tsx.
 */
export function entryArgs(entry: string): string[] {
  const compiled = compiledScript(`dist/${entry.replace(/\.ts$/, '.js')}`);
  return compiled === null ? ['--import', 'tsx', join(root, entry)] : [compiled];
}
