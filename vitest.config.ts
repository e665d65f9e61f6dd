import { configDefaults, defineConfig } from 'vitest/config';

// Two projects, one run: `npm test` runs both; `npm run test:unit` (--project unit) runs only the
// pure modules, with no global setup, so no Redis, PostgreSQL, FerretDB or Chromium is started.
const UNIT = 'test/unit/**/*.test.ts';

/**
 * Every time limit in the tests detects a hang; none is a speed limit (performance is measured in
 * bench/, as ratios). So each sits far above any duration seen on a slow machine: in a full run
 * on a throttled one (2026-12-01, vitest 699 s) a unit test took 4.7 s and ordinary integration
 * tests up to 24 s, where the limits were 5 s and 30 s, and a browser test failed CI at 30 s
 * (docs/ci.md). A test may ask for more (a longer scenario), never for less. The waits inside a
 * test (`eventually`) keep their own, shorter times: some must end before a fallback would make
 * the assertion true anyway (a lock's expiry, a lease, a stalled-job check).
 */
const TIME_LIMITS = { unitTest: 60_000, test: 120_000, hook: 240_000 };

export default defineConfig({
  test: {
    // Two cores: at most three test files at a time, whichever project they belong to.
    maxWorkers: 3,
    teardownTimeout: 30_000,
    projects: [
      {
        test: {
          name: 'unit',
          include: [UNIT],
          // Pure functions: the files share a worker's module cache (no isolation), as they hold
          // no state. Forks, not threads: the growth tests (test/helpers/growth.ts) measure their
          // cost as the process's CPU time, which must not hold another test file's work.
          pool: 'forks',
          isolate: false,
          maxWorkers: 3,
          // A time limit here detects a hang; it is no speed limit (TIME_LIMITS above).
          testTimeout: TIME_LIMITS.unitTest,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, UNIT],
          globalSetup: ['test/global-setup.ts'],
          // Each test file has its own database and queue prefix; forks, as the files start and
          // stop child processes (the API, workers, Redis for outage tests). Not isolated: a fork
          // runs file after file with one module cache, so the service's modules (BullMQ, the
          // MongoDB driver, Koa, ...) are loaded once a fork, not once a file (that import took
          // 354 s of a 909 s run; 16 s without isolation). The service keeps no state in its
          // modules that one file could leave to the next: each stack has its own services.
          pool: 'forks',
          isolate: false,
          maxWorkers: 3,
          testTimeout: TIME_LIMITS.test,
          hookTimeout: TIME_LIMITS.hook,
        },
      },
    ],
  },
});
