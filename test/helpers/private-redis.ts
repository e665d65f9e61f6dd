import type { RedisClient } from '../../core/platform/redis.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ensureRedisServer,
  startRedis,
  type LocalRedis,
  type RedisOptions,
} from '../../scripts/local/services.js';

// A Redis server of a test's own, in a fresh directory: for tests that stop it, flush it or
// change its configuration, which must not touch the run's shared Redis (or other test files).

export interface PrivateRedis extends LocalRedis {
  url: string;
  /** Stops the server and deletes its directory. */
  remove(): Promise<void>;
}

/** `persistent`: its data survives a stop and start, as the chaos run's Redis does. */
export async function startPrivateRedis(
  options: Pick<RedisOptions, 'persistent'> = {},
): Promise<PrivateRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'private-redis-'));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  try {
    const server = await startRedis(await ensureRedisServer(() => {}), dir, options);
    return {
      ...server,
      url: `redis://127.0.0.1:${server.port}`,
      remove: async () => {
        await server.stop();
        await removeDir();
      },
    };
  } catch (err) {
    await removeDir();
    throw err;
  }
}

/**
 * How many times Redis has run `command` (INFO commandstats): a count of this file's own only on a
 * Redis of its own, as above. A record lock is taken with one SET.
 */
export async function commandCalls(redis: RedisClient, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}
