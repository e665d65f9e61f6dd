import type { Collection, Db, Document } from 'mongodb';

// Every collection the service uses, by name, so that indexes, tests and domain code agree.
export const COLLECTIONS = {
  firms: 'firms',
  apiKeys: 'api_keys',
  agents: 'agents',
  calls: 'calls',
  chats: 'chats',
  idempotencyKeys: 'idempotency_keys',
} as const;

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];

export function collection<T extends Document>(db: Db, name: CollectionName): Collection<T> {
  return db.collection<T>(name);
}
