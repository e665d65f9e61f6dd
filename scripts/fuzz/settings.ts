// The fuzzer's paths and knobs (environment variables), shared by the files of scripts/fuzz.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Reports (JSON, NDJSON, JUnit), the apps' logs and the run's Schemathesis configuration. */
export const outDir = join(root, '.local', 'fuzz');
export const FIRM = 'fuzz-firm';

export const say = (line: string): void => void process.stderr.write(`[fuzz] ${line}\n`);

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    say(`${name} must be an integer >= ${min} (got "${raw}")`);
    process.exit(2);
  }
  return n;
}

export const settings = {
  maxExamples: intEnv('FUZZ_MAX_EXAMPLES', 100, 1),
  maxTime: process.env.FUZZ_MAX_TIME ? intEnv('FUZZ_MAX_TIME', 0, 1) : undefined,
  /** A run that takes longer than this (seconds) is stopped and fails. */
  runTimeout: intEnv('FUZZ_RUN_TIMEOUT', 1800, 1),
  seed: intEnv('FUZZ_SEED', 20240601, 0),
  // One generating thread: CPython 3.11 before 3.11.8 shares ast.parse's recursion counter
  // between threads (CPython gh-106905), which crashed Hypothesis with two (docs/ci.md).
  workers: intEnv('FUZZ_WORKERS', 1, 1),
  phases: process.env.FUZZ_PHASES || 'examples,coverage,fuzzing,stateful',
  logLevel: process.env.FUZZ_LOG_LEVEL || 'warn',
};
