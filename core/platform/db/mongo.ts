import { MongoClient, MongoInvalidArgumentError, MongoParseError, type Db } from 'mongodb';
import { ConfigError } from '../config.js';
import { watchHeartbeats, type HeartbeatWatchdog, type WatchdogLog } from './heartbeat-watchdog.js';

export interface Mongo {
  client: MongoClient;
  db: Db;
  /** Connects the client again when the driver's server monitor is stuck (heartbeat-watchdog.ts). */
  watchdog: HeartbeatWatchdog;
  /** Stops the watchdog, then closes the client. */
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 3000;
/** The driver's default, named here because the watchdog's bound follows from it. */
const HEARTBEAT_FREQUENCY_MS = 10_000;
/** Longer than any heartbeat may take: its socket timeout, plus the await of a streaming one, plus slack. */
const STUCK_HEARTBEAT_MS = CONNECT_TIMEOUT_MS + HEARTBEAT_FREQUENCY_MS + 5000;

export interface MongoOptions {
  log?: WatchdogLog;
  /** When a heartbeat unanswered counts as stuck (tests make it short). */
  stuckHeartbeatMs?: number;
}

/** Connects lazily: a down server surfaces as errors on use (mapped to 503), not at start. */
export function createMongo(uri: string, options: MongoOptions = {}): Mongo {
  let client: MongoClient;
  try {
    client = new MongoClient(uri, {
      serverSelectionTimeoutMS: 3000,
      connectTimeoutMS: CONNECT_TIMEOUT_MS,
      heartbeatFrequencyMS: HEARTBEAT_FREQUENCY_MS,
      maxPoolSize: 20,
      appName: 'intake-service',
    });
  } catch (err) {
    // The driver's own parser refused the string (an option it does not take, say): the process
    // stops naming the variable, with the driver's reason and never the string (a password).
    if (err instanceof MongoParseError || err instanceof MongoInvalidArgumentError) {
      throw new ConfigError([
        `MONGODB_URI must be a connection string the MongoDB driver takes (${err.message.slice(0, 160)})`,
      ]);
    }
    throw err;
  }
  const watchdog = watchHeartbeats(client, {
    stuckAfterMs: options.stuckHeartbeatMs ?? STUCK_HEARTBEAT_MS,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return {
    client,
    // The driver's own default (no path in the URI) would be "test"; ours is "intake".
    db: client.db(databaseName(uri)),
    watchdog,
    async close() {
      await watchdog.stop();
      await client.close();
    },
  };
}

export async function pingMongo(mongo: Mongo): Promise<void> {
  await mongo.db.command({ ping: 1 });
}

/** The database named in the URI's path (mongodb://host/<name>), else "intake". */
function databaseName(uri: string): string {
  const path = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/.exec(uri)?.[1] ?? '';
  return decodeURIComponent(path) || 'intake';
}
