import { configDefaults, defineConfig } from 'vitest/config';

// Two projects, one run: `npm test` runs both; `npm run test:unit` (--project unit) runs only the
// pure modules, with no global setup, so no Redis, PostgreSQL, FerretDB or Chromium is started.
const UNIT = 'test/unit/**/*.test.ts';

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
          // no state; a test that needs more than the default 5 s is not a unit test. Forks, not
          // threads: the growth tests (test/helpers/growth.ts) measure their cost as the process's
          // CPU time, which must not hold another test file's work.
          pool: 'forks',
          isolate: false,
          maxWorkers: 3,
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
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
