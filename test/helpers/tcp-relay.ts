import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

// A TCP relay in front of a server (the run's database): a test can end every connection at
// once, as a stopping server does, or open the relay on a port that refused connections before,
// or lose the answers to one request that did reach the server (loseRepliesAfter), or hold one
// request back from the server until the test lets it go (holdRequest).

export interface TcpRelay {
  port: number;
  /** The connections open now (the client side). */
  open: Set<Socket>;
  /** `url` with its port replaced by the relay's. */
  via(url: string): string;
  /**
   * The next request whose bytes hold `marker` reaches the server, but nothing the server sends
   * on that connection from then on reaches the client: a partition right after the request. With
   * `reconnects: 'lost'`, nor on any connection the relay takes while it lasts (a client that
   * connects again does not get through either); with `'through'` (the default) a new connection
   * does. The connections are ended `forMs` later (the client then reconnects). Resolves when
   * they are ended.
   */
  loseRepliesAfter(marker: string, forMs: number, reconnects?: 'lost' | 'through'): Promise<void>;
  /**
   * The next request whose bytes hold `marker`, and whatever follows it on that connection, is
   * held back from the server until `release()`; `seen` resolves when it is held.
   */
  holdRequest(marker: string): { seen: Promise<void>; release(): void };
  close(): Promise<void>;
}

interface RequestHold {
  marker: Buffer;
  seen: () => void;
  /** Set when it holds a connection: sends what it held, and lets the rest through. */
  release?: () => void;
  released: boolean;
}

interface ReplyLoss {
  marker: Buffer;
  forMs: number;
  reconnects: 'lost' | 'through';
  done: () => void;
}

/** The bytes of a `command` on a collection, as the driver sends it (BSON): its first element. */
const commandOn = (command: string, collection: string): string => {
  const length = Buffer.alloc(4);
  length.writeInt32LE(collection.length + 1);
  return `\u0002${command}\u0000${length.toString('latin1')}${collection}\u0000`;
};

/**
 * The bytes of an `update` command on a collection, as the driver sends it (BSON): a marker for
 * holdRequest that holds a write to that collection.
 */
export const updateCommandOn = (collection: string): string => commandOn('update', collection);

/** The bytes of an `insert` command on a collection: a marker for holdRequest that holds an insert. */
export const insertCommandOn = (collection: string): string => commandOn('insert', collection);

/** The bytes of a `delete` command on a collection: a marker for holdRequest that holds a delete. */
export const deleteCommandOn = (collection: string): string => commandOn('delete', collection);

/** Relays 127.0.0.1:`port` (0: any free port) to `target`'s host and port. */
export async function startTcpRelay(target: URL, port = 0): Promise<TcpRelay> {
  const open = new Set<Socket>();
  let armed: ReplyLoss | null = null;
  let armedHold: RequestHold | null = null;
  /** While a loss with `reconnects: 'lost'` lasts: how to end each connection it holds. */
  let partition: Set<() => void> | null = null;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    let losing = partition !== null;
    partition?.add(() => drop());
    let held: Buffer[] | null = null;
    // The end of the previous chunk, so that a marker split across two chunks is still seen.
    let tail = Buffer.alloc(0);
    const requests = new Transform({
      transform(chunk: Buffer, _enc, next) {
        if (held !== null) {
          held.push(chunk);
          next();
          return;
        }
        const hold = armedHold;
        if (hold !== null && chunk.includes(hold.marker)) {
          armedHold = null;
          const queue: Buffer[] = [chunk];
          held = queue;
          hold.release = () => {
            if (held !== queue) return;
            held = null;
            for (const c of queue) requests.push(c);
          };
          if (hold.released) hold.release();
          hold.seen();
          next();
          return;
        }
        const loss = armed;
        if (loss !== null) {
          const seen = Buffer.concat([tail, chunk]);
          if (seen.includes(loss.marker)) {
            armed = null;
            losing = true;
            const lost = new Set([drop]);
            if (loss.reconnects === 'lost') partition = lost;
            setTimeout(() => {
              if (partition === lost) partition = null;
              for (const end of lost) end();
              loss.done();
            }, loss.forMs);
          }
          tail = seen.subarray(Math.max(0, seen.length - loss.marker.length + 1));
        }
        next(null, chunk);
      },
    });
    const replies = new Transform({
      transform(chunk: Buffer, _enc, next) {
        next(null, losing ? undefined : chunk);
      },
    });
    client.pipe(requests).pipe(upstream);
    upstream.pipe(replies).pipe(client);
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
    loseRepliesAfter(marker, forMs, reconnects = 'through') {
      return new Promise<void>((resolve) => {
        armed = { marker: Buffer.from(marker), forMs, reconnects, done: resolve };
      });
    },
    holdRequest(marker) {
      let seen!: () => void;
      const hold: RequestHold = {
        marker: Buffer.from(marker),
        seen: () => seen(),
        released: false,
      };
      const seenPromise = new Promise<void>((resolve) => (seen = resolve));
      armedHold = hold;
      return {
        seen: seenPromise,
        release() {
          hold.released = true;
          hold.release?.();
        },
      };
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
