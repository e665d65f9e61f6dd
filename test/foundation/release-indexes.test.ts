// The release step's indexes (core/platform/db/indexes.ts) run on every deploy, over a database
// that already has them: a second run creates nothing and keeps the connection (FerretDB dropped it
// when one createIndexes named indexes that already existed), a dropped index comes back alone,
// and an index of ours found under its name with another key stops the release.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient, type Db } from 'mongodb';
import { dropRetiredIndexes, ensureIndexes } from '../../core/platform/db/indexes.js';
import { freshMongoUri } from '../helpers/stack.js';

let client: MongoClient;
let db: Db;
beforeAll(async () => {
  client = await MongoClient.connect(freshMongoUri());
  db = client.db();
});
afterAll(async () => {
  await db?.dropDatabase().catch(() => {});
  await client?.close();
});

const indexNames = async (collection: string) =>
  (await db.collection(collection).listIndexes().toArray()).map((i) => String(i.name)).sort();

describe('ensureIndexes over a database that has them', () => {
  it('the first run creates every index; the next ones create nothing, on the same connection', async () => {
    const first = await ensureIndexes(db);
    expect(first).toContain('contacts.firm_search_terms');
    expect(first).toContain('dial_decisions.firm_phone_at_id');
    // Collections with two and three indexes each: the ones FerretDB refused to be asked again.
    expect(await ensureIndexes(db)).toEqual([]);
    expect(await ensureIndexes(db)).toEqual([]);
    expect(await indexNames('contacts')).toEqual([
      '_id_',
      'firm_created_id',
      'firm_search_terms',
      'import_id',
    ]);
    expect(await db.command({ ping: 1 })).toMatchObject({ ok: 1 });
  });

  it('an index dropped by hand is created again, alone', async () => {
    await ensureIndexes(db);
    await db.collection('contacts').dropIndex('firm_search_terms');
    expect(await ensureIndexes(db)).toEqual(['contacts.firm_search_terms']);
    expect(await indexNames('contacts')).toContain('firm_search_terms');
  });

  it('an index of ours under its name with another key is an error naming it, not kept silently', async () => {
    await ensureIndexes(db);
    await db.collection('leads').dropIndex('firm_created_id');
    await db.collection('leads').createIndex({ firm: 1 }, { name: 'firm_created_id' });
    await expect(ensureIndexes(db)).rejects.toThrow(
      /index leads\.firm_created_id exists with key .*"firm":1}, not/,
    );
  });

  it('an index an earlier version made and no query uses is dropped by the release, once, and not made again', async () => {
    // The test before left leads' index under another key.
    await db
      .collection('leads')
      .dropIndex('firm_created_id')
      .catch(() => undefined);
    await ensureIndexes(db);
    // The lost-chats sweep's index on the chat documents, as the versions before made it.
    await db
      .collection('chats')
      .createIndex({ firm: 1, status: 1, ended_at: 1, _id: 1 }, { name: 'firm_status_ended_id' });
    expect(await dropRetiredIndexes(db)).toEqual(['chats.firm_status_ended_id']);
    expect(await indexNames('chats')).toEqual(['_id_', 'firm_created']);
    expect(await dropRetiredIndexes(db)).toEqual([]);
    expect(await ensureIndexes(db)).toEqual([]);
    // The sweep reads the ends from the log now.
    expect(await indexNames('chat_turns')).toEqual(['_id_', 'firm_kind_created_id']);
  });
});
