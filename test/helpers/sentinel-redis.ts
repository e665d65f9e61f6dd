import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { launch, type Launched } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { ensureRedisServer } from '../../scripts/local/services.js';

// A primary, a replica (`--replicaof`) and three Sentinels (`redis-server --sentinel`, which
// is what Debian's redis-sentinel runs) on loopback, with a quick failover: a primary
// unanswering for 1 s is down, and two Sentinels agreeing on it start the failover.

export interface RedisNode {
  port: number;
  launched: Launched;
}

export interface SentinelGroup {
  name: string;
  primary: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** `host:port,…` as REDIS_SENTINELS takes it. */
  sentinelList: string;
  /** The primary's port the Sentinels name now. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
}

async function startNode(
  bin: string,
  dir: string,
  name: string,
  args: string[],
  port: number,
): Promise<RedisNode> {
  const launched = launch({
    name,
    command: bin,
    args,
    output: { file: join(dir, `${name}.log`) },
    ready: { port },
    readyTimeoutMs: 30_000,
  });
  await launched.ready;
  return { port, launched };
}

const serverArgs = (dir: string, name: string, port: number): string[] => [
  '--port',
  String(port),
  '--bind',
  '127.0.0.1',
  '--dir',
  dir,
  '--dbfilename',
  `${name}.rdb`,
  '--save',
  '',
  '--appendonly',
  'no',
  '--maxmemory-policy',
  'noeviction',
  '--loglevel',
  'warning',
];

export async function startSentinelGroup(dir: string, name = 'intake'): Promise<SentinelGroup> {
  const bin = await ensureRedisServer(() => {});
  const started: RedisNode[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((node) => node.launched.stop()));
  };
  try {
    const primaryPort = await freePort();
    const primary = await startNode(
      bin,
      dir,
      'primary',
      serverArgs(dir, 'primary', primaryPort),
      primaryPort,
    );
    started.push(primary);
    const replicaPort = await freePort();
    const replica = await startNode(
      bin,
      dir,
      'replica',
      [...serverArgs(dir, 'replica', replicaPort), '--replicaof', '127.0.0.1', String(primaryPort)],
      replicaPort,
    );
    started.push(replica);
    const sentinels: RedisNode[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const file = join(dir, `sentinel-${i}.conf`);
      // Sentinel rewrites its file as it learns the group: it must be a file of its own.
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const node = await startNode(
        bin,
        dir,
        `sentinel-${i}`,
        [file, '--sentinel', '--loglevel', 'warning'],
        port,
      );
      sentinels.push(node);
      started.push(node);
    }
    const ask = async <T>(port: number, run: (r: Redis) => Promise<T>): Promise<T> => {
      const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      try {
        await client.connect();
        return await run(client);
      } finally {
        client.disconnect();
      }
    };
    // Ready when the replica is in sync and each Sentinel knows the replica and the other two.
    for (let tries = 0; ; tries++) {
      const link = await ask(replica.port, (r) => r.info('replication'));
      const known = await Promise.all(
        sentinels.map((s) =>
          ask(s.port, async (r) => ({
            replicas: ((await r.call('SENTINEL', 'REPLICAS', name)) as unknown[]).length,
            sentinels: ((await r.call('SENTINEL', 'SENTINELS', name)) as unknown[]).length,
          })),
        ),
      );
      if (link.includes('master_link_status:up') && known.every((k) => k.replicas === 1 && k.sentinels === 2))
        break;
      if (tries > 300) throw new Error(`Sentinel group not ready: ${JSON.stringify(known)}`);
      await sleep(100);
    }
    return {
      name,
      primary,
      replica,
      sentinels,
      sentinelList: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
      primaryPort: async () => {
        const [, port] = (await ask(sentinels[0]!.port, (r) =>
          r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name),
        )) as [string, string];
        return Number(port);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
