import type { Collection, Db, Document } from 'mongodb';

// Every collection the service uses, by name, so that indexes, tests and domain code agree.
export const COLLECTIONS = {
  firms: 'firms',
  apiKeys: 'api_keys',
  agents: 'agents',
  calls: 'calls',
  chats: 'chats',
  /** Each chat's exchange log, one document per version (`<chat_id>:<version>`): see core/domain/chats.ts. */
  chatTurns: 'chat_turns',
  idempotencyKeys: 'idempotency_keys',
  /** The simulator's own records of the calls it placed (its "provider database"). */
  simulatorCalls: 'simulator_calls',
} as const;

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];

export function collection<T extends Document>(db: Db, name: CollectionName): Collection<T> {
  return db.collection<T>(name);
}
