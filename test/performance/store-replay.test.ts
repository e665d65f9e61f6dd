// The store replay that bounds capacity (bench/lib/store-replay.ts) issues exactly the recipe's
// commands, whole operations out of fractional per-call counts, on clones of the source's documents
// in a scratch database: counted here with the driver's command monitoring, on a real FerretDB.
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayStores } from '../../bench/lib/store-replay.js';
import { freshMongoUri, rand } from '../helpers/stack.js';

let client: MongoClient;
const started: CommandStartedEvent[] = [];

beforeAll(async () => {
  client = new MongoClient(freshMongoUri(), { monitorCommands: true });
  client.on('commandStarted', (e) => started.push(e));
  await client.connect();
});
afterAll(async () => {
  await client.db().dropDatabase();
  await client.close();
});

describe('store replay', () => {
  it('issues the recipe per call on clones of the source documents, seeding what is updated but not inserted', async () => {
    const source = client.db();
    const transcript = 'word '.repeat(2000);
    await source.collection('calls').insertOne({ _id: 'call_1' as never, status: 'ended', transcript });
    await source.collection('leases').insertOne({ _id: 'lease_1' as never, token: 't', until: new Date() });
    const scratch = client.db(`replay_${rand()}`);
    const result = await replayStores({
      source,
      scratch,
      recipe: {
        collections: [
          { name: 'calls', ins: 1, upd: 2.5, del: 0 },
          { name: 'leases', ins: 0.5, upd: 0, del: 0.5 },
          // Never inserted by a call: one document a call is put there before timing.
          { name: 'firms', ins: 0, upd: 1, del: 0 },
        ],
        finds: 1.5,
      },
      calls: 4,
      concurrency: 2,
      cpuSeconds: () => 0,
    });
    const on = (name: string) =>
      started.filter((e) => e.databaseName === scratch.databaseName && e.commandName === name);
    const docs = (name: string) =>
      on(name).flatMap(
        (e) =>
          e.command[name === 'insert' ? 'documents' : name === 'update' ? 'updates' : 'deletes'] as unknown[],
      );
    // Calls: one insert and 2, 3, 2, 3 updates; leases: an insert and a delete every other call;
    // firms: a seeded document (insert) and one update a call; finds 1, 2, 1, 2.
    expect(docs('insert')).toHaveLength(4 + 2 + 4);
    expect(docs('update')).toHaveLength(10 + 4);
    expect(docs('delete')).toHaveLength(2);
    expect(on('find')).toHaveLength(6);
    const inserted = docs('insert') as { _id: string; transcript?: string }[];
    // Clones of the source's own documents (their fields and size), each under an id of its own.
    expect(inserted.filter((d) => d._id.includes('|calls|')).every((d) => d.transcript === transcript)).toBe(
      true,
    );
    expect(new Set(inserted.map((d) => d._id)).size).toBe(inserted.length);
    expect(result.callsPerSecond).toBeGreaterThan(0);
    // The scratch database is dropped at the end; the source is left as it was.
    expect(await scratch.listCollections().toArray()).toEqual([]);
    expect(await source.collection('calls').countDocuments()).toBe(1);
  });
});
