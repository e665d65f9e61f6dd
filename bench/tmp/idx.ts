import { MongoClient } from 'mongodb';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { atExit, cleanup, startStores } from '../lib/stack.js';
async function main() {
  const stores = await startStores();
  const client = new MongoClient(stores.mongodbUri);
  atExit(() => client.close());
  for (let i = 0; i < 3; i++) {
    const db = client.db(`idx_${Date.now()}_${i}`);
    const t = performance.now();
    await ensureIndexes(db);
    console.log('ensureIndexes ms', (performance.now() - t).toFixed(0), 'collections', (await db.listCollections().toArray()).length);
    await db.dropDatabase();
  }
}
main().finally(() => cleanup());
