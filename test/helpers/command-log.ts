import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { afterAll, inject } from 'vitest';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { freshMongoUri } from './stack.js';

/**
 * A client of its own on a fresh database, with the driver's command monitoring: every command it
 * sends is logged as `<command> <collection>` (what a test of a store's cost counts). `drop()`
 * removes the database and closes the client.
 */
export function commandLoggingClient(): { client: MongoClient; commands: string[]; drop(): Promise<void> } {
  const client = new MongoClient(freshMongoUri(), { monitorCommands: true });
  const commands: string[] = [];
  client.on('commandStarted', (event: CommandStartedEvent) => {
    const target: unknown = event.command[event.commandName];
    commands.push(`${event.commandName} ${typeof target === 'string' ? target : ''}`);
  });
  return {
    client,
    commands,
    async drop() {
      await client
        .db()
        .dropDatabase()
        .catch(() => {});
      await client.close().catch(() => {});
    },
  };
}

/**
 * A test file's stores for the effect recorder: a command-logging client (above) and a Redis
 * client for the record locks, both closed (the database dropped) after the file's tests.
 */
export function loggedStoresWithRedis(): { client: MongoClient; commands: string[]; redis: RedisClient } {
  const logging = commandLoggingClient();
  const redis = createRedis({ url: inject('redisUrl') }, 'worker');
  afterAll(async () => {
    await logging.drop();
    redis.disconnect();
  });
  return { client: logging.client, commands: logging.commands, redis };
}
