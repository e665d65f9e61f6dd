import { MongoClient, type Db } from 'mongodb';

export interface Mongo {
  client: MongoClient;
  db: Db;
}

/** Connects lazily: a down server surfaces as errors on use (mapped to 503), not at start. */
export function createMongo(uri: string): Mongo {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 3000,
    connectTimeoutMS: 3000,
    maxPoolSize: 20,
    appName: 'intake-service',
  });
  // The driver's own default (no path in the URI) would be "test"; ours is "intake".
  return { client, db: client.db(databaseName(uri)) };
}

export async function pingMongo(mongo: Mongo): Promise<void> {
  await mongo.db.command({ ping: 1 });
}

/** The database named in the URI's path (mongodb://host/<name>), else "intake". */
function databaseName(uri: string): string {
  const path = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/.exec(uri)?.[1] ?? '';
  return decodeURIComponent(path) || 'intake';
}
