// A local Redis Cluster for tests and chaos runs (REDIS_CLUSTER=true): three masters, no
// replicas, each a redis-server with `--cluster-enabled yes` on a free 127.0.0.1 port, joined by
// `redis-cli --cluster create` (which assigns the 16384 slots evenly), ready once every node
// reports `cluster_state:ok`.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { restartable, startOnFreePorts } from './launcher.js';
import { LocalServiceError } from './install.js';
import { freePort } from './ports.js';

const run = promisify(execFile);

export interface LocalRedisCluster {
  ports: number[];
  /** REDIS_URL for the service: one node (the startup node; the client finds the others). */
  url: string;
  stop(): Promise<void>;
}

async function clusterInfo(port: number): Promise<string> {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await redis.cluster('INFO');
  } catch {
    return '';
  } finally {
    redis.disconnect();
  }
}

/** Starts `masters` cluster nodes under `dir` (redis-server `bin`) and joins them. */
export async function startRedisCluster(bin: string, dir: string, masters = 3): Promise<LocalRedisCluster> {
  const nodes: Array<{ port: number; stop(): Promise<void> }> = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < masters; i++) {
      // Each node listens on two ports: its clients' and the cluster bus. The bus is named
      // (`--cluster-port`), not left at port + 10000, which may be any client's ephemeral port.
      const node = await startOnFreePorts(async () => {
        const port = await freePort();
        const busPort = await freePort();
        const nodeDir = join(dir, `node-${port}`);
        await mkdir(nodeDir, { recursive: true });
        const server = restartable({
          name: `redis-cluster-${port}`,
          command: bin,
          args: [
            ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
            ...['--dir', nodeDir, '--cluster-enabled', 'yes'],
            ...['--cluster-config-file', join(nodeDir, 'nodes.conf'), '--cluster-node-timeout', '5000'],
            ...['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
            ...['--protected-mode', 'yes', '--loglevel', 'warning'],
          ],
          ownGroup: false,
          ready: { port },
          readyTimeoutMs: 30_000,
        });
        await server.start();
        return { port, stop: server.stop };
      });
      nodes.push(node);
    }
    const cli = join(bin, '..', 'redis-cli');
    const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
    await run(cli, ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const infos = await Promise.all(nodes.map((n) => clusterInfo(n.port)));
      if (infos.every((info) => info.includes('cluster_state:ok'))) break;
      if (Date.now() > deadline)
        throw new LocalServiceError(`the local Redis Cluster did not reach cluster_state:ok`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { ports: nodes.map((n) => n.port), url: `redis://127.0.0.1:${nodes[0]!.port}`, stop };
}
