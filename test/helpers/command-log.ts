import { MongoClient, type CommandStartedEvent } from 'mongodb';
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
