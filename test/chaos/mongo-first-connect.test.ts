// Found by the chaos run (seed 1337, with the webhook outbox's drain): a worker restarted while
// FerretDB was stopped failed every job for good with "Topology is closed". The driver (7.9)
// closes its topology when the first connection fails but keeps it on the client, so no later
// operation connects again. createMongo's watchdog (core/platform/db/heartbeat-watchdog.ts) now
// connects such a client again. Here the database's port first refuses connections (a relay not
// yet listening), then a relay to the run's database opens on it.
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { freePort } from '../../scripts/local/services.js';
import { eventually } from '../helpers/eventually.js';
import { freshMongoUri } from '../helpers/stack.js';

let relay: Server | undefined;
let mongo: Mongo | undefined;
const open = new Set<Socket>();

afterAll(async () => {
  await mongo?.close();
  for (const s of open) s.destroy();
  await new Promise<void>((resolve) => (relay === undefined ? resolve() : relay.close(() => resolve())));
});

function startRelay(port: number, target: URL): Promise<Server> {
  const server = createServer((client) => {
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
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

describe('a client whose first connection failed', () => {
  it('connects again once the database is reachable, instead of failing with "Topology is closed" for good', async () => {
    const target = new URL(freshMongoUri());
    const port = await freePort();
    const via = new URL(target);
    via.port = String(port);
    mongo = createMongo(via.toString(), { stuckHeartbeatMs: 60_000 });

    // Nothing listens: the first operation fails server selection, and the driver closes its topology.
    await expect(mongo.db.collection('probe').findOne({})).rejects.toThrow();

    relay = await startRelay(port, target);
    expect((relay.address() as AddressInfo).port).toBe(port);
    await eventually(async () => {
      await mongo!.db.collection('probe').insertOne({ _id: 'reachable' } as never);
    }, 20_000);
    expect(await mongo.db.collection('probe').findOne({ _id: 'reachable' } as never)).not.toBeNull();
    expect(mongo.watchdog.recoveries).toBeGreaterThanOrEqual(1);
    await mongo.db.dropDatabase();
  });
});
