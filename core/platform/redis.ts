import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { ConfigError } from './config.js';
import type { Logger } from './logger.js';
import { createCluster, readyMasters } from './redis-cluster.js';
import { redisTlsSettings, tlsOptions, type RedisTlsSettings } from './redis-tls.js';
import { redisSentinelSettings, sentinelOptions, type RedisSentinelSettings } from './redis-sentinel.js';

export type RedisRole = 'producer' | 'worker';

/** A connection the service opened: one server, or a Redis Cluster (REDIS_CLUSTER). */
export type RedisClient = Redis | Cluster;

/**
 * Where Redis is and how to reach it: everything a connection needs, taken from the Config
 * (`redisSettings(config)`) so every connection the service opens (web, workers, BullMQ's
 * duplicates, scripts) is made the same way. Tools with only a URL pass `{ url }`.
 */
export interface RedisSettings {
  url: string;
  /** REDIS_CLUSTER: `url` is one node of a Redis Cluster (core/platform/redis-cluster.ts). */
  cluster?: boolean;
  /** REDIS_TLS_CA / REDIS_TLS_REJECT_UNAUTHORIZED (redis-tls.ts). */
  tls?: RedisTlsSettings;
  /** REDIS_SENTINELS / REDIS_SENTINEL_NAME (redis-sentinel.ts). */
  sentinel?: RedisSentinelSettings;
}

type RedisConfig = { redisUrl: string; redisCluster: boolean } & Parameters<typeof redisTlsSettings>[0] &
  Parameters<typeof redisSentinelSettings>[0];

/**
 * The Redis part of the configuration; a ConfigError for an unreadable REDIS_TLS_CA, or for
 * REDIS_CLUSTER with REDIS_SENTINELS (a cluster fails over by itself; Sentinel is for one primary).
 */
export function redisSettings(config: RedisConfig): RedisSettings {
  const tls = redisTlsSettings(config);
  const sentinel = redisSentinelSettings(config);
  if (config.redisCluster && sentinel !== undefined) {
    throw new ConfigError([
      'REDIS_CLUSTER=true and REDIS_SENTINELS are exclusive: a Redis Cluster fails over by itself, Sentinel watches one primary',
    ]);
  }
  return {
    url: config.redisUrl,
    ...(config.redisCluster ? { cluster: true } : {}),
    ...(tls ? { tls } : {}),
    ...(sentinel ? { sentinel } : {}),
  };
}

/** What the settings add to a connection's options (BullMQ's duplicates inherit them). */
function placeOptions(settings: RedisSettings): RedisOptions {
  return {
    ...(settings.tls ? { tls: tlsOptions(settings.tls) } : {}),
    ...(settings.sentinel ? sentinelOptions(settings.sentinel, settings.url.startsWith('rediss:')) : {}),
  };
}

/**
 * How long a producer waits for one command's reply. A Redis that accepts connections but
 * answers nothing (a stopped process, a partition that drops packets) would otherwise hold a
 * request until TCP gives up (150 s was seen); past this the command fails as Redis down does, so
 * the API answers 503 and a webhook is kept in MongoDB. Far above any command's time on a busy
 * machine: the web issues no blocking command.
 */
export const PRODUCER_COMMAND_TIMEOUT_MS = 5_000;

/**
 * A producer's connection that has received nothing for this long while commands await their
 * reply is dropped and made again (ioredis `socketTimeout`), a little before those commands time
 * out (at the same instant, the request given the timeout could send its next command down the
 * dead connection first). By the time a request learns of the timeout the connection is no longer
 * `ready`, and what checks its status (the rate limits, `enqueue`, the delivery outbox) goes on
 * as for Redis down, instead of each command paying PRODUCER_COMMAND_TIMEOUT_MS again (a signed
 * webhook paid it twice, then the enqueue's wait: 12 s, past the 10 s after which Retell gives
 * up). The new connection's ready check gets no answer either, so it stays not ready until Redis
 * answers again. Commands awaiting a reply on the dropped connection are sent once more on the
 * new one, as after any reconnect.
 */
const PRODUCER_SOCKET_TIMEOUT_MS = PRODUCER_COMMAND_TIMEOUT_MS - 500;

/**
 * Producers (the web process) give up on a command after one reconnect attempt, or when it has
 * no reply within PRODUCER_COMMAND_TIMEOUT_MS (their connection dropped just before, see
 * PRODUCER_SOCKET_TIMEOUT_MS), and `enqueue` refuses at once while the connection is not ready,
 * so the API answers 503 instead of hanging; workers wait for Redis forever, as
 * BullMQ requires. (The offline queue stays on for producers: BullMQ sends INFO as soon as a
 * Queue is constructed.)
 */
export function createRedis(settings: RedisSettings, role: RedisRole): RedisClient {
  const common: RedisOptions = {
    connectTimeout: 3000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
  };
  const options: RedisOptions =
    role === 'producer'
      ? {
          ...common,
          maxRetriesPerRequest: 1,
          commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
          socketTimeout: PRODUCER_SOCKET_TIMEOUT_MS,
        }
      : { ...common, maxRetriesPerRequest: null, enableReadyCheck: true };
  const placed = { ...options, ...placeOptions(settings) };
  const redis =
    settings.cluster === true ? createCluster(settings.url, placed) : new Redis(settings.url, placed);
  // Errors are reported through readiness and request failures; an unhandled 'error' event would crash.
  redis.on('error', () => {});
  return redis;
}

/** BullMQ loses jobs if Redis evicts keys: warn loudly when the policy is not noeviction. */
export async function warnUnlessNoEviction(redis: RedisClient, log: Logger): Promise<void> {
  try {
    // A cluster's masters each have their own policy (CONFIG reaches one node).
    for (const node of await readyMasters(redis)) {
      const reply = (await node.config('GET', 'maxmemory-policy')) as string[];
      const policy = reply[1];
      if (policy !== undefined && policy !== 'noeviction') {
        log.warn(
          { policy, node: `${node.options.host ?? ''}:${node.options.port ?? ''}` },
          `Redis maxmemory-policy is "${policy}"; BullMQ needs "noeviction" or jobs can be lost`,
        );
      }
    }
  } catch (err) {
    // Managed Redis may forbid CONFIG; say so once rather than guess.
    log.warn(
      { err: (err as Error).message },
      'could not read Redis maxmemory-policy; make sure it is noeviction',
    );
  }
}
