// One Schemathesis run over the served /openapi.json with one token; its reports (JSON, NDJSON,
// JUnit) go to .local/fuzz/<label>/.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { launch, type Launched } from '../local/launcher.js';
import { schemathesisBin } from './python-env.js';
import { outDir, say, settings } from './settings.js';

export interface RunResult {
  label: string;
  attempt: number;
  exitCode: number;
  durationMs: number;
  reportDir: string;
  timedOut: boolean;
}

let current: Launched | undefined;

/** Stops the run in progress, if any (on a signal). */
export function stopSchemathesis(): void {
  void current?.stop('SIGTERM', 30_000);
}

/** `attempt` 2 is the retry of a run whose tool crashed: the same seed, reports of its own. */
export async function schemathesis(
  label: string,
  attempt: number,
  base: string,
  token: string,
  configPath: string,
): Promise<RunResult> {
  const reportDir = join(outDir, attempt === 1 ? label : `${label}-retry`);
  await rm(reportDir, { recursive: true, force: true });
  const args = [
    '--config-file',
    configPath,
    'run',
    `${base}/openapi.json`,
    '--checks',
    'all',
    '--phases',
    settings.phases,
    '--seed',
    String(settings.seed),
    '--max-examples',
    String(settings.maxExamples),
    ...(settings.maxTime === undefined ? [] : ['--max-time', String(settings.maxTime)]),
    '--workers',
    String(settings.workers),
    '--header',
    `Authorization: Bearer ${token}`,
    '--request-timeout',
    '30',
    '--generation-database',
    'none',
    '--continue-on-failure',
    '--report',
    'json,ndjson,junit',
    '--report-json-path',
    join(reportDir, 'report.json'),
    '--report-ndjson-path',
    join(reportDir, 'events.ndjson'),
    '--report-junit-path',
    join(reportDir, 'junit.xml'),
    '--no-color',
  ];
  say(`schemathesis run as ${label}: ${args.filter((a) => !a.startsWith('Authorization')).join(' ')}`);
  const started = Date.now();
  const child = launch({
    name: 'schemathesis',
    command: schemathesisBin,
    args,
    cwd: outDir,
    // No __pycache__ beside hooks.py in the work tree.
    env: {
      ...process.env,
      FUZZ_TIME_ZONES_FILE: join(outDir, 'time-zones.json'),
      FUZZ_ATTEMPT: String(attempt),
      PYTHONDONTWRITEBYTECODE: '1',
    },
    output: 'inherit',
  });
  current = child;
  let timedOut = false;
  const timeoutSeconds = (settings.maxTime ?? 0) + settings.runTimeout;
  const watchdog = setTimeout(() => {
    timedOut = true;
    say(`${label}: still running after ${timeoutSeconds} s; stopping it`);
    void child.stop('SIGTERM', 30_000);
  }, timeoutSeconds * 1000);
  const exitCode = (await child.exited).code ?? 1;
  clearTimeout(watchdog);
  current = undefined;
  return { label, attempt, exitCode, durationMs: Date.now() - started, reportDir, timedOut };
}
