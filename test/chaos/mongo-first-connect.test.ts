// Found by the chaos run (seed 1337, with the webhook outbox's drain): a worker restarted while
// FerretDB was stopped failed every job for good with "Topology is closed". The driver (7.9)
// closes its topology when the first connection fails but keeps it on the client, so no later
// operation connects again. createMongo's watchdog (core/platform/db/heartbeat-watchdog.ts) now
// connects such a client again. Here the database's port first refuses connections (a relay not
// yet listening), then a relay to the run's database opens on it.
import { afterAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { freePort } from '../../scripts/local/services.js';
import { eventually } from '../helpers/eventually.js';
import { freshMongoUri } from '../helpers/stack.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';

let relay: TcpRelay | undefined;
let mongo: Mongo | undefined;

afterAll(async () => {
  await mongo?.close();
  await relay?.close();
});

describe('a client whose first connection failed', () => {
  it('connects again once the database is reachable, instead of failing with "Topology is closed" for good', async () => {
    const target = new URL(freshMongoUri());
    const port = await freePort();
    const via = new URL(target);
    via.port = String(port);
    mongo = createMongo(via.toString(), { stuckHeartbeatMs: 60_000 });

    // Nothing listens: the first operation fails server selection, and the driver closes its topology.
    await expect(mongo.db.collection('probe').findOne({})).rejects.toThrow();

    relay = await startTcpRelay(target, port);
    expect(relay.port).toBe(port);
    await eventually(async () => {
      await mongo!.db.collection('probe').insertOne({ _id: 'reachable' } as never);
    }, 20_000);
    expect(await mongo.db.collection('probe').findOne({ _id: 'reachable' } as never)).not.toBeNull();
    expect(mongo.watchdog.recoveries).toBeGreaterThanOrEqual(1);
    await mongo.db.dropDatabase();
  });
});
