// Starts the real Redis and FerretDB once for the whole run (or uses REDIS_URL / MONGODB_URI),
// makes sure Chromium is there for the browser tests, and compiles the service once for the
// child processes tests start (scripts/local/compiled.ts).
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { MongoClient } from 'mongodb';
import type { TestProject } from 'vitest/node';
import { useCompiledCopy } from '../scripts/local/compiled.js';
import { startLocalServices, type LocalServices } from '../scripts/local/services.js';
import { ensureChromium } from './helpers/chromium.js';

let local: LocalServices | undefined;
let compiledDir: string | undefined;
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
  // The forks, started after this, inherit the variables: their children run the compiled copy,
  // and every node process of the run (the forks, and the children they start) shares V8's code
  // cache inside it (a compiled web app's import took 1.75–1.82 s of CPU without it, 1.25–1.6 s
  // with it), so it goes with the copy. Compiled while the stores start.
  const compiled = useCompiledCopy(`run-${process.pid}-${randomBytes(3).toString('hex')}`).then((dir) => {
    compiledDir = dir;
  });
  compiled.catch(() => {}); // awaited below, once the stores are up
  local = await startLocalServices(
    { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
    (l) => process.stderr.write(`[test setup] ${l}\n`),
  );
  await compiled;
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
  if (compiledDir !== undefined) await rm(compiledDir, { recursive: true, force: true });
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
