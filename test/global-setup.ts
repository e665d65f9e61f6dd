// Starts the real Redis and FerretDB once for the whole run (or uses REDIS_URL / MONGODB_URI),
// and makes sure Chromium is there for the browser tests.
import type { TestProject } from 'vitest/node';
import { startLocalServices, type LocalServices } from '../scripts/local/services.js';
import { ensureChromium } from './helpers/chromium.js';

let local: LocalServices | undefined;

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    mongodbUri: string;
    /** Port of the Redis server this run started, when it started one (tests stop and restart it). */
    localRedisPort: number;
    chromiumPath: string;
  }
}

export async function setup(project: TestProject): Promise<void> {
  local = await startLocalServices(
    { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
    (l) => process.stderr.write(`[test setup] ${l}\n`),
  );
  project.provide('redisUrl', local.redisUrl);
  project.provide('mongodbUri', local.mongodbUri);
  project.provide('localRedisPort', local.redis?.port ?? 0);
  project.provide('chromiumPath', await ensureChromium((l) => process.stderr.write(`[test setup] ${l}\n`)));
}

export async function teardown(): Promise<void> {
  await local?.stop();
}
