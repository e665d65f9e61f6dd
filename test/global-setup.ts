// Starts the real Redis and FerretDB once for the whole run (or uses REDIS_URL / MONGODB_URI),
// and makes sure Chromium is there for the browser tests.
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { TestProject } from 'vitest/node';
import { startLocalServices, type LocalServices } from '../scripts/local/services.js';
import { ensureChromium } from './helpers/chromium.js';

let local: LocalServices | undefined;
/** Every database the run's stacks make starts with this (test/helpers/stack.ts freshMongoUri). */
const databasePrefix = `t_${randomBytes(3).toString('hex')}_`;

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    mongodbUri: string;
    /** Port of the Redis server this run started, when it started one (tests stop and restart it). */
    localRedisPort: number;
    chromiumPath: string;
    databasePrefix: string;
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
  project.provide('databasePrefix', databasePrefix);
  project.provide('chromiumPath', await ensureChromium((l) => process.stderr.write(`[test setup] ${l}\n`)));
}

export async function teardown(): Promise<void> {
  // A MongoDB the run did not start keeps nothing of it: the databases each fork's stacks left for
  // the next one (test/helpers/stack.ts), and any a test did not drop. Ours goes with its folder.
  if (local !== undefined && local.ferretdb === undefined) await dropRunDatabases(local.mongodbUri);
  await local?.stop();
}

async function dropRunDatabases(mongodbUri: string): Promise<void> {
  const client = await MongoClient.connect(mongodbUri);
  try {
    const { databases } = await client.db().admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      if (name.startsWith(databasePrefix)) await client.db(name).dropDatabase();
    }
  } finally {
    await client.close();
  }
}
