import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

// A Lua script run atomically by Redis: sent once per server (EVALSHA), its text again only
// when the server does not know it yet (NOSCRIPT, e.g. after a restart).

export interface RedisScript {
  run(redis: Redis, keys: string[], args: Array<string | number>): Promise<unknown>;
}

export function defineRedisScript(source: string): RedisScript {
  const sha = createHash('sha1').update(source).digest('hex');
  return {
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
        return redis.eval(source, keys.length, ...keys, ...args);
      }
    },
  };
}
