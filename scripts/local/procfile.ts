// The Procfile is where a process type's runtime settings are declared: the environment its
// line assigns (MALLOC_ARENA_MAX=2) and the flags it gives node
// (--scavenger-max-new-space-capacity-mb=8).
// `npm start`, the bench, the soak, the fault matrix and the tests' service processes launch the
// web and the worker with what this reads from it, so a process run or measured here is
// configured as the one the platform runs.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledScript } from './compiled.js';
import { launch, type Launched, type LaunchOptions } from './launcher.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ProcfileLaunch {
  /** The variables the line assigns before the command (`NAME=value`). */
  env: Record<string, string>;
  /** node's own flags, between `node` and the script. */
  nodeArgs: string[];
  /** The script the line runs, as written (relative to the repository). */
  script: string;
}

const ASSIGNMENT = /^([A-Z_][A-Z0-9_]*)=([\w.,:/-]*)$/;
const FLAG = /^--[a-z0-9-]+(=[\w.,:/-]+)?$/;

/**
 * Parses one Procfile `<type>: [NAME=value ...] node [--flag ...] <script>` line. Anything else
 * (another command, quotes, shell operators, arguments after the script) is refused rather than
 * read half-way: a launcher that ran part of a line would measure a process the platform never runs.
 */
export function parseProcfileLine(type: string, text: string): ProcfileLaunch {
  const line = text.split('\n').find((l) => l.startsWith(`${type}:`));
  if (line === undefined) throw new Error(`the Procfile has no "${type}" process`);
  const words = line
    .slice(type.length + 1)
    .trim()
    .split(/\s+/);
  const refuse = (why: string): never => {
    throw new Error(`Procfile "${type}": ${why} (line: ${line.trim()})`);
  };
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && ASSIGNMENT.test(words[i]!); i++) {
    const [, name, value] = ASSIGNMENT.exec(words[i]!)!;
    env[name!] = value!;
  }
  if (words[i] !== 'node') refuse('the command is not node');
  i++;
  const nodeArgs: string[] = [];
  for (; i < words.length && words[i]!.startsWith('-'); i++) {
    if (!FLAG.test(words[i]!)) refuse(`"${words[i]}" is not a --flag or --flag=value`);
    nodeArgs.push(words[i]!);
  }
  if (i !== words.length - 1) refuse('expected exactly one script after the flags');
  const script = words[i]!;
  if (!/^[\w./-]+\.js$/.test(script)) refuse(`"${script}" is not a .js path`);
  return { env, nodeArgs, script };
}

/** The repository's Procfile line for `type` (`web`, `worker`). */
export function procfileLaunch(type: 'web' | 'worker'): ProcfileLaunch {
  return parseProcfileLine(type, readFileSync(join(root, 'Procfile'), 'utf8'));
}

/**
 * Launches `type` as its Procfile line runs the compiled script: the line's node flags, the
 * variables it assigns laid over `env` (the whole environment the child gets), from the
 * repository's folder. The script is the test run's compiled copy when there is one
 * (scripts/local/compiled.ts), else its TypeScript through tsx.
 */
export function launchAsProcfile(
  type: 'web' | 'worker',
  env: NodeJS.ProcessEnv,
  options: Omit<LaunchOptions, 'command' | 'args' | 'cwd' | 'env'>,
): Launched {
  const declared = procfileLaunch(type);
  return launch({
    ...options,
    command: process.execPath,
    args: nodeArgsOf(declared),
    cwd: root,
    env: { ...env, ...declared.env },
  });
}

/** node's arguments for a line: its flags and the compiled script, or its TypeScript through tsx. */
export function nodeArgsOf(declared: ProcfileLaunch): string[] {
  const compiled = compiledScript(declared.script);
  return compiled === null ? tsxArgs(declared) : [...declared.nodeArgs, compiled];
}

/** node's arguments for a line's TypeScript entry: its flags, the tsx loader, the `.ts` script. */
export function tsxArgs(declared: ProcfileLaunch): string[] {
  const entry = declared.script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
  return [...declared.nodeArgs, '--import', 'tsx', entry];
}
