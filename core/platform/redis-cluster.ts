import { Cluster, type ClusterOptions, type Redis, type RedisOptions } from 'ioredis';

// REDIS_CLUSTER=true: REDIS_URL names one node of a Redis Cluster (ElastiCache cluster mode,
// MemoryDB, Redis Enterprise's OSS Cluster API). ioredis asks it for the slot map (CLUSTER
// SLOTS) and connects to every master it lists, following MOVED/ASK redirections and
// refreshing the map after a failover. Every node connection is made with the same options
// as a single-node connection (timeouts, retries, credentials, TLS), so producer and worker
// connections behave alike on both.
//
// What changes for the code: a command whose keys are in different slots fails (CROSSSLOT),
// which is why core/platform/redis-keys.ts and jobs/queues.ts put hash tags in the keys when
// the cluster flag is on; and a command without keys (INFO, CONFIG, SCAN) reaches one node
// only, which is what `masters` below is for.

/** The startup node and credentials from REDIS_URL (a cluster has no database number). */
function startupNode(url: string): { host: string; port: number; username?: string; password?: string } {
  const parsed = new URL(url);
  const node = { host: parsed.hostname, port: parsed.port === '' ? 6379 : Number(parsed.port) };
  const username = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  return {
    ...node,
    ...(username === '' ? {} : { username }),
    ...(password === '' ? {} : { password }),
  };
}

/**
 * A cluster client whose node connections use `options` (built by createRedis for the role).
 * Its retry strategy becomes the cluster's: a cluster reconnects as a whole.
 */
export function createCluster(url: string, options: RedisOptions): Cluster {
  const { host, port, username, password } = startupNode(url);
  const { retryStrategy, ...perNode } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...perNode,
      ...(username === undefined ? {} : { username }),
      ...(password === undefined ? {} : { password }),
      ...(url.startsWith('rediss:') && perNode.tls === undefined ? { tls: {} } : {}),
    },
    ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: retryStrategy }),
    enableReadyCheck: true,
    // A failover moves slots: look again soon rather than fail the command.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: 3000,
    // Managed clusters with TLS announce names their certificates are issued for; resolving
    // them to addresses first would fail the certificate's name check (ioredis's advice for
    // ElastiCache). On loopback it changes nothing.
    dnsLookup: (address, callback) => callback(null, address),
  };
  return new Cluster([{ host, port }], clusterOptions);
}

export const isCluster = (redis: Redis | Cluster): redis is Cluster => redis.isCluster;

/**
 * The connections a keyless command must visit to see the whole data set: every master of a
 * cluster, or the one server.
 */
export function masters(redis: Redis | Cluster): Redis[] {
  return isCluster(redis) ? redis.nodes('master') : [redis];
}

/** `masters`, once a cluster client has its slot map (before that it knows no node). */
export async function readyMasters(redis: Redis | Cluster): Promise<Redis[]> {
  if (isCluster(redis) && redis.status !== 'ready')
    await new Promise((resolve) => redis.once('ready', resolve));
  return masters(redis);
}

/** Every key matching `pattern` on every master (SCAN reaches one node only on a cluster). */
export async function scanAll(redis: Redis | Cluster, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of masters(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found;
}
