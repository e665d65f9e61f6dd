// Found by the chaos run: a worker started shortly before a FerretDB restart failed every job for
// 17 minutes with "connection 8 to 127.0.0.1:… closed" after the database was back. The driver's
// server monitor had written its heartbeat to a socket the server had just closed and waited for
// good on a 'drain' that never comes; the server stayed Unknown, so every operation failed server
// selection. createMongo's watchdog (core/platform/db/heartbeat-watchdog.ts) connects the client
// again. Here a TCP relay in front of the run's database ends every connection at once while
// writes are in flight, as a database that stops does; the database itself stays up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { eventually } from '../helpers/eventually.js';
import { freshMongoUri } from '../helpers/stack.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { setTimeout as sleep } from 'node:timers/promises';

let relay: TcpRelay;
let relayUri: string;

beforeAll(async () => {
  const target = new URL(freshMongoUri());
  relay = await startTcpRelay(target);
  relayUri = relay.via(target.toString());
});
afterAll(async () => relay?.close());

/** The server closes every connection (FIN), as a stopping database does. */
function endEveryConnection(): number {
  const n = relay.open.size;
  for (const s of relay.open) s.end();
  return n;
}

async function firstSuccess(mongo: Mongo, deadlineMs: number): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    try {
      await mongo.db.collection('monitor_probe').findOne({ _id: 'probe' as never });
      return true;
    } catch {
      await sleep(200);
    }
  }
  return false;
}

describe('the MongoDB client after every connection was closed under load', () => {
  it('works again once the database answers, even when the driver monitor hung', async () => {
    // Each cycle is a process that started just before the outage, as the chaos run's worker.
    for (let cycle = 0; cycle < 3; cycle++) {
      const mongo = createMongo(relayUri, { stuckHeartbeatMs: 2000 });
      try {
        const things = mongo.db.collection<{ _id: string; n: number }>('monitor_things');
        await things.updateOne({ _id: 'seed' }, { $set: { n: 0 } }, { upsert: true });
        let writing = true;
        const writers = Array.from({ length: 30 }, async (_, i) => {
          while (writing) {
            await things
              .updateOne({ _id: `w${i}` }, { $set: { n: Date.now() } }, { upsert: true })
              .catch(() => sleep(100));
          }
        });
        await sleep(700);
        // More than one connection to end: waited for rather than counted at 700 ms, when a
        // loaded machine may not have opened the second yet.
        await eventually(async () => expect(relay.open.size).toBeGreaterThan(1), 30_000, 20);
        endEveryConnection();
        // Without the watchdog the client answers "connection N … closed" for good.
        const recovered = await firstSuccess(mongo, 30_000);
        writing = false;
        await Promise.all(writers);
        expect(recovered, `cycle ${cycle}: the client never worked again`).toBe(true);
        await things.updateOne({ _id: 'seed' }, { $set: { n: cycle + 1 } });
        expect((await things.findOne({ _id: 'seed' }))?.n).toBe(cycle + 1);
      } finally {
        await mongo.close();
      }
    }
  }, 150_000);
});
