// A server a test stops and starts again (the chaos run's Redis outage) must come back on its own
// port: its clients know no other. CI once failed the chaos subset with "redis-server exited with
// code 1 at start" and nothing more. Three things keep that from happening again, or say why it did:
// forks choose ports in slices of their own, a restart that exits at once is tried again, and the
// local Redis's log is quoted in the error.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { portAnswers, restartable } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { ensureRedisServer, startRedis } from '../../scripts/local/redis.js';

const SERVE = `
const server = require('node:net').createServer((s) => s.end());
server.on('error', (err) => { console.error(err.code); process.exit(1); });
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));`;

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Holds 127.0.0.1:port the way another process's server would. */
async function hold(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return server;
}
const release = (server: Server) => new Promise((resolve) => server.close(resolve));

describe('ports of test forks', () => {
  it('two forks choose their ports in ranges that do not meet', async () => {
    const before = process.env.VITEST_POOL_ID;
    const choose = async (pool: string) => {
      process.env.VITEST_POOL_ID = pool;
      return Promise.all(Array.from({ length: 30 }, () => freePort()));
    };
    try {
      const first = await choose('1');
      const second = await choose('2');
      expect(Math.max(...first)).toBeLessThan(Math.min(...second));
    } finally {
      if (before === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = before;
    }
  });
});

describe('a server started again on its port', () => {
  it('comes back when its port is held for a moment at the restart', async () => {
    const port = await freePort();
    const server = restartable({
      name: 'port child',
      command: process.execPath,
      args: ['-e', SERVE],
      env: { ...process.env, PORT: String(port) },
      ready: { port },
      readyTimeoutMs: 15_000,
    });
    cleanup.push(() => server.stop());
    await server.start();
    await server.stop();
    const stranger = await hold(port);
    const released = new Promise((resolve) => setTimeout(resolve, 400)).then(() => release(stranger));
    await server.start();
    await released;
    // It is the restarted child that answers: the stranger is gone.
    expect(await portAnswers(port)).toBe(true);
  });

  it("the local Redis's error quotes its log when its port stays taken", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'restart-redis-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const redis = await startRedis(await ensureRedisServer(() => {}), dir, { persistent: true });
    cleanup.push(() => redis.stop());
    await redis.stop();
    const stranger = await hold(redis.port);
    cleanup.push(() => release(stranger));
    const error = await redis.start().then(
      () => null,
      (err: unknown) => err,
    );
    expect(String(error)).toMatch(/redis-server exited with code 1 at start: .*Address already in use/);
    expect(String(error)).toMatch(/attempt 3 of 3/);
  });
});
