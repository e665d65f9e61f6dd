// A local redis-server: found on PATH or installed from Debian's package, started on a free
// 127.0.0.1 port with its data in a folder we give it.
import { join } from 'node:path';
import { restartable, startOnFreePorts } from './launcher.js';
import { aptInstall, LocalServiceError, which, type Say } from './install.js';
import { freePort } from './ports.js';

export interface LocalRedis {
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface RedisOptions {
  /**
   * Keep the data across a stop and start (append-only file, flushed on shutdown), as a
   * production Redis does; by default a stopped Redis comes back empty.
   */
  persistent?: boolean;
  /** A process group of its own (npm start: a terminal's Ctrl-C then leaves it to us). */
  ownGroup?: boolean;
}

/** redis-server from PATH, else from Debian's package (as root, with apt-get). */
export async function ensureRedisServer(say: Say): Promise<string> {
  const found = await which('redis-server');
  if (found) return found;
  await aptInstall(
    'redis-server',
    'redis-server is not installed and cannot be installed here (needs apt-get as root). ' +
      'Install Redis 6.2+ or set REDIS_URL to a Redis you run.',
    say,
  );
  const installed = await which('redis-server');
  if (!installed)
    throw new LocalServiceError('apt-get installed redis-server but it is not on PATH; set REDIS_URL.');
  return installed;
}

export async function startRedis(bin: string, dir: string, options: RedisOptions = {}): Promise<LocalRedis> {
  return startOnFreePorts(() => startRedisOnce(bin, dir, options));
}

async function startRedisOnce(bin: string, dir: string, options: RedisOptions): Promise<LocalRedis> {
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    options.persistent ? 'yes' : 'no',
    ...(options.persistent ? ['--appendfsync', 'everysec'] : []),
    '--maxmemory-policy',
    'noeviction',
    '--protected-mode',
    'yes',
    '--loglevel',
    'warning',
  ];
  const { start, stop } = restartable({
    name: 'redis-server',
    command: bin,
    args,
    ownGroup: options.ownGroup ?? false,
    // Its log (warnings and up) in its folder: a start that fails says why (a port another process
    // took, an append-only file it cannot load), in the launcher's error.
    output: { file: join(dir, `redis-${port}.log`) },
    ready: { port },
    readyTimeoutMs: 30_000,
  });
  await start();
  return { port, start, stop };
}
