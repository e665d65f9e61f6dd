// Redis through Sentinel (REDIS_SENTINELS + REDIS_SENTINEL_NAME): ioredis asks the Sentinels
// for the primary, and asks again on every reconnect, so a failover is followed without a
// restart. Kept apart from redis.ts so every connection takes the same options from one place.
import type { RedisOptions } from 'ioredis';
import { ConfigError } from './config.js';

export interface RedisSentinelSettings {
  sentinels: { host: string; port: number }[];
  name: string;
}

interface SentinelConfig {
  redisSentinels?: string[] | undefined;
  redisSentinelName?: string | undefined;
}

/** Undefined unless both variables are set (the configuration refuses one without the other). */
export function redisSentinelSettings(config: SentinelConfig): RedisSentinelSettings | undefined {
  if (config.redisSentinels === undefined || config.redisSentinelName === undefined) return undefined;
  return {
    sentinels: config.redisSentinels.map((entry) => {
      const at = entry.lastIndexOf(':');
      const port = Number(entry.slice(at + 1));
      if (port < 1 || port > 65535) throw new ConfigError([`REDIS_SENTINELS: ${entry} has no valid port`]);
      return { host: entry.slice(0, at), port };
    }),
    name: config.redisSentinelName,
  };
}

/**
 * ioredis's Sentinel options. REDIS_URL still gives the primary's password, user and database
 * (its host and port are not used); `rediss://` means TLS to the primary (the Sentinels
 * themselves are asked in plain TCP). A dead primary breaks the connection, and ioredis asks the
 * Sentinels again on every reconnect; a demoted one is left because Sentinel kills its clients
 * when it reconfigures it, and a write that still meets it (READONLY) reconnects too. ioredis's
 * `failoverDetector` is not used: when its disconnect lands while a reconnect is asking the
 * Sentinels, ioredis ends the connection for good ("Connection is closed."; seen here as a worker
 * that never resumed after a failover).
 */
export function sentinelOptions(sentinel: RedisSentinelSettings, tls: boolean): RedisOptions {
  return {
    sentinels: sentinel.sentinels,
    name: sentinel.name,
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
    ...(tls ? { enableTLSForSentinelMode: true } : {}),
  };
}
