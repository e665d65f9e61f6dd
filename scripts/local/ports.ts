import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

// Ports for the servers we start (local stores, the tests' web processes, fakes that need their
// port before they start). A port is chosen, then bound by another process a moment later; in
// between, anything may take it. The OS's own choice (port 0) comes from the ephemeral range that
// every outgoing connection on the machine draws from too, so on a busy machine a client socket
// took a chosen port now and then. Chosen here instead: at random below that range, where only
// servers bind, and checked free on every IPv4 address. The launcher then checks that the child
// it started is the one listening (port-owner.ts).

/** The first port of the OS's ephemeral range (Linux), or null when it cannot be read. */
function ephemeralStart(): number | null {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const port = Number(low);
    return Number.isInteger(port) ? port : null;
  } catch {
    return null;
  }
}

const FLOOR = 20_000;

/** Binds `port` (0: the OS's choice) on every IPv4 address and frees it; its number, or null if taken. */
function tryPort(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(null));
    server.listen(port, '0.0.0.0', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : null));
    });
  });
}

/**
 * Test forks (vitest's VITEST_POOL_ID, 1 to maxWorkers) choose in slices of their own: a server a
 * test stops and starts again (a Redis outage) comes back on its port, and while it is down the
 * port looks free; another fork's server could take it then. Within a fork, files run one at a
 * time. Outside the tests, the whole range.
 */
const SLICES = 8;

function rangeOf(floor: number, ceiling: number): { low: number; size: number } {
  const pool = Number(process.env.VITEST_POOL_ID);
  if (!Number.isInteger(pool) || pool < 1) return { low: floor, size: ceiling - floor };
  const size = Math.floor((ceiling - floor) / SLICES);
  return { low: floor + ((pool - 1) % SLICES) * size, size };
}

/** A TCP port free on this machine now, below the ephemeral range where it can. */
export async function freePort(): Promise<number> {
  const ceiling = ephemeralStart();
  if (ceiling !== null && ceiling - FLOOR >= 2_000) {
    const { low, size } = rangeOf(FLOOR, ceiling);
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await tryPort(low + Math.floor(Math.random() * size));
      if (port !== null) return port;
    }
  }
  const port = await tryPort(0);
  if (port === null) throw new Error('no free port');
  return port;
}
