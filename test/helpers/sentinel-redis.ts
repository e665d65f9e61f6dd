import { writeFile } from 'node:fs/promises';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { launch, type Launched } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { ensureRedisServer } from '../../scripts/local/services.js';

// A primary, a replica (`--replicaof`) and three Sentinels (`redis-server --sentinel`, which
// is what Debian's redis-sentinel runs) on loopback, with a quick failover: a primary
// unanswering for 1 s is down, and two Sentinels agreeing on it start the failover. The
// primary is reached through a relay (its address for the replica, the Sentinels and so the
// service: a Sentinel would re-point a replica replicating from any other address), and the test
// can hold the replication link in it: the primary's writes then stop reaching the replica (a
// slow link, stretched), which makes replication's window measurable.

export interface RedisNode {
  port: number;
  launched: Launched;
}

export interface SentinelGroup {
  name: string;
  /** The primary's own port is `primary.port`; everyone reaches it at `primaryAddressPort`. */
  primary: RedisNode;
  primaryAddressPort: number;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** `host:port,…` as REDIS_SENTINELS takes it. */
  sentinelList: string;
  /** From now on the primary's replication stream is kept from the replica (and dropped with the primary). */
  holdReplication(): void;
  /**
   * SIGKILLs the primary, and its address (the relay) stops answering, as a dead host's does: on
   * a shared machine another process may take the freed port, and a client sent there by a
   * Sentinel that has not yet failed over would write into a stranger's Redis.
   */
  killPrimary(): void;
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
  let closeRelay = async (): Promise<void> => {};
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((node) => node.launched.stop()));
    await closeRelay();
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
    const relay = await startReplicationRelay(primaryPort);
    closeRelay = relay.close;
    const replicaPort = await freePort();
    const replica = await startNode(
      bin,
      dir,
      'replica',
      [...serverArgs(dir, 'replica', replicaPort), '--replicaof', '127.0.0.1', String(relay.port)],
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
          `sentinel monitor ${name} 127.0.0.1 ${relay.port} 2`,
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
    const ready = async (): Promise<string> => {
      const link = await ask(replica.port, (r) => r.info('replication'));
      const known = await Promise.all(
        sentinels.map((s) =>
          ask(s.port, async (r) => ({
            replicas: ((await r.call('SENTINEL', 'REPLICAS', name)) as unknown[]).length,
            sentinels: ((await r.call('SENTINEL', 'SENTINELS', name)) as unknown[]).length,
          })),
        ),
      );
      const done =
        link.includes('master_link_status:up') && known.every((k) => k.replicas === 1 && k.sentinels === 2);
      return done ? '' : JSON.stringify(known);
    };
    for (let tries = 0; ; tries++) {
      const missing = await ready().catch((err: Error) => err.message);
      if (missing === '') break;
      if (tries > 300) throw new Error(`Sentinel group not ready: ${missing}`);
      await sleep(100);
    }
    return {
      name,
      primary,
      primaryAddressPort: relay.port,
      replica,
      sentinels,
      holdReplication: relay.hold,
      killPrimary: () => {
        relay.cut();
        primary.launched.child.kill('SIGKILL');
      },
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

/**
 * Relays every connection to the primary; `hold` stops passing on what the primary sends over
 * the replication link (the connection that asked for PSYNC) from then on, dropping it.
 */
async function startReplicationRelay(
  primaryPort: number,
): Promise<{ port: number; hold(): void; cut(): void; close(): Promise<void> }> {
  let held = false;
  let cut = false;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(primaryPort, '127.0.0.1');
    let replication = false;
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes('PSYNC') || chunk.includes('psync')) replication = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!(held && replication)) client.write(chunk);
    });
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
    };
    for (const socket of [client, upstream]) socket.on('error', drop).on('close', drop);
    open.add(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hold: () => {
      held = true;
    },
    cut: () => {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
