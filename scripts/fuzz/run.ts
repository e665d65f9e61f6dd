// `npm run fuzz`: an outside fuzzer (Schemathesis, from PyPI) against the real stack, driven
// only by the OpenAPI document the service serves at /openapi.json.
//
//  1. the stack: local stores, release, web and worker, simulator voices (stack.ts);
//  2. a firm, a firm API key, an agent, a chat and two finished calls, made through the API
//     (seed-data.ts);
//  3. Schemathesis in a virtual environment under .local/ (python-env.ts);
//  4. two runs over /openapi.json — with the firm key, then with the platform key — every check,
//     every phase (examples, coverage, fuzzing, stateful), a fixed seed and a bounded budget
//     (schemathesis.ts, read back by report.ts);
//  5. exit 1 on any 5xx or any response the document does not describe (summary.ts); exit 3
//     when the tool itself crashed (an exception inside Schemathesis or Hypothesis) twice in a
//     row with the same seed, a run that crashed once being retried (result: tool-crash); else 0.
// What the document says that JSON Schema tools cannot read (a custom format, x-unique-by) is
// taught to Schemathesis by scripts/fuzz/hooks.py.
//
// Knobs (environment): FUZZ_MAX_EXAMPLES (per operation and phase, default 100: about 6 min in
// all on a busy 2-core machine), FUZZ_MAX_TIME (seconds per run; fuzzing and stateful then repeat
// until it is spent), FUZZ_SEED (default 20240601), FUZZ_WORKERS (default 1, see docs/ci.md),
// FUZZ_PHASES (default all four), FUZZ_RUN_TIMEOUT (seconds a run may take beyond FUZZ_MAX_TIME,
// default 1800), FUZZ_LOG_LEVEL (the apps' LOG_LEVEL, default warn), FUZZ_PYTHON (the venv's
// interpreter, default Debian's /usr/bin/python3), FUZZ_INJECT_CRASH (always|once: make the tool
// crash on purpose, see hooks.py).
// Reports (JSON, NDJSON, JUnit) and the apps' logs go to .local/fuzz/.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureSchemathesis } from './python-env.js';
import { readRun, type RunSummary } from './report.js';
import { configToml } from './schemathesis-config.js';
import { schemathesis, stopSchemathesis } from './schemathesis.js';
import { makeFixtures } from './seed-data.js';
import { answeredByStatus, diffCounts, serverLogIndex } from './server-side.js';
import { outDir, say } from './settings.js';
import { startStack } from './stack.js';
import { printSummary } from './summary.js';

async function main(): Promise<number> {
  await mkdir(outDir, { recursive: true });
  await ensureSchemathesis();

  let stopStack: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  const cleanup = () =>
    (stopping ??= (async () => {
      stopSchemathesis();
      await stopStack?.();
    })());
  const onSignal = () => {
    say('interrupted; stopping everything');
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const { base, adminKey, crashed } = await startStack((stop) => (stopStack = stop));
    const fixtures = await makeFixtures(base, adminKey);
    const configPath = join(outDir, 'schemathesis.toml');
    await writeFile(configPath, configToml(fixtures));
    // What the service accepts as an iana-time-zone: the names its runtime knows.
    await writeFile(
      join(outDir, 'time-zones.json'),
      JSON.stringify(['UTC', ...Intl.supportedValuesOf('timeZone')]),
    );

    // The firm key first: the platform run may revoke API keys and delete agents it finds.
    const runs: RunSummary[] = [];
    for (const [label, token] of [
      ['firm-key', fixtures.firmKey],
      ['platform-key', adminKey],
    ] as const) {
      const attempt = async (n: number) => {
        const before = await answeredByStatus(base);
        const result = await schemathesis(label, n, base, token, configPath);
        return readRun(result, diffCounts(await answeredByStatus(base), before));
      };
      let summary = await attempt(1);
      if (summary.toolCrashes.length > 0) {
        // A crash of the tool says nothing about the service; once more with the same seed.
        say(
          `${label}: the tool crashed (${summary.toolCrashes.join('; ')}); retrying once with the same seed`,
        );
        summary = await attempt(2);
      }
      runs.push(summary);
    }
    return printSummary(runs, crashed, await serverLogIndex(), base);
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
