import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

// A TCP relay in front of a server (the run's database): a test can end every connection at
// once, as a stopping server does, or open the relay on a port that refused connections before.

export interface TcpRelay {
  port: number;
  /** The connections open now (the client side). */
  open: Set<Socket>;
  /** `url` with its port replaced by the relay's. */
  via(url: string): string;
  close(): Promise<void>;
}

/** Relays 127.0.0.1:`port` (0: any free port) to `target`'s host and port. */
export async function startTcpRelay(target: URL, port = 0): Promise<TcpRelay> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    open.add(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    open,
    via(url) {
      const u = new URL(url);
      u.port = String(bound);
      return u.toString();
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
