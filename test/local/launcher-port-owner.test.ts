// A child started on a port chosen just before is ready only when it listens there itself: a port
// another server took meanwhile answers the readiness check too, and the child (which then exits
// with EADDRINUSE) must not be taken for ready. CI once ran a test's "second web process" against
// another test's server this way: every request got that server's 401.
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { launch, LaunchError, startOnFreePorts, type Launched } from '../../scripts/local/launcher.js';
import { portHeldBy } from '../../scripts/local/port-owner.js';
import { freePort } from '../../scripts/local/ports.js';

/** A node child serving 200 on 127.0.0.1:port (exit 1 if it cannot bind). */
const SERVE = `
const server = require('node:http').createServer((_, res) => res.end('child'));
server.on('error', (err) => { console.error(err.code); process.exit(1); });
server.listen(Number(process.env.PORT), '127.0.0.1');`;

const launchServer = (port: number, ready: 'url' | 'port'): Launched =>
  launch({
    name: 'port child',
    command: process.execPath,
    args: ['-e', SERVE],
    env: { ...process.env, PORT: String(port) },
    ready: ready === 'url' ? { url: `http://127.0.0.1:${port}/` } : { port },
    readyTimeoutMs: 15_000,
  });

const stranger = async (): Promise<{ server: Server; port: number }> => {
  const server = createServer((_, res) => res.end('stranger'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
};

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

describe('launcher readiness on a chosen port', () => {
  for (const ready of ['url', 'port'] as const) {
    it(`(${ready}) a port another server holds fails the start instead of passing for ready`, async () => {
      const { server, port } = await stranger();
      cleanup.push(() => new Promise((resolve) => server.close(resolve)));
      const child = launchServer(port, ready);
      cleanup.push(() => child.stop());
      const error = await child.ready.then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(LaunchError);
      expect(String(error)).toMatch(/exited with code 1 at start/);
    });

    it(`(${ready}) the child listening on its port is ready, and that port is held by it`, async () => {
      const child = await startOnFreePorts(async () => {
        const launched = launchServer(await freePort(), ready);
        await launched.ready;
        return launched;
      });
      cleanup.push(() => child.stop());
      expect(child.running()).toBe(true);
    });
  }

  it('portHeldBy tells the listening process from any other', async () => {
    const { server, port } = await stranger();
    cleanup.push(() => new Promise((resolve) => server.close(resolve)));
    expect(await portHeldBy(port, process.pid)).toBe(true);
    const port2 = await freePort();
    const child = launchServer(port2, 'port');
    cleanup.push(() => child.stop());
    await child.ready;
    expect(await portHeldBy(port2, child.pid!)).toBe(true);
    // This process is the child's parent: the child's port is held within its tree, not by the child
    // alone; the stranger's port is not the child's.
    expect(await portHeldBy(port2, process.pid)).toBe(true);
    expect(await portHeldBy(port, child.pid!)).toBe(false);
    // Nothing listening: held by no one.
    expect(await portHeldBy(await freePort(), process.pid)).toBe(false);
  });
});

describe('freePort', () => {
  it('chooses below the ephemeral range, where outgoing connections never take a port', async () => {
    const { readFileSync } = await import('node:fs');
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) expect(port).toBeLessThan(low);
    expect(new Set(ports).size).toBeGreaterThan(1);
  });
});
