import type { Collection, Db, Document } from 'mongodb';

// Every collection the service uses, by name, so that indexes, tests and domain code agree.
export const COLLECTIONS = {
  firms: 'firms',
  apiKeys: 'api_keys',
  /** Key documents: the API key for a key's SHA-256 (`_id` = the hash), read on every request. */
  apiKeyHashes: 'api_key_hashes',
  /** Key documents: when a firm's session tokens were last revoked (`_id` = the firm slug). */
  sessionRevocations: 'session_revocations',
  agents: 'agents',
  calls: 'calls',
  chats: 'chats',
  /** Each chat's exchange log, one document per version (`<chat_id>:<version>`): see core/domain/chats.ts. */
  chatTurns: 'chat_turns',
  /** Key documents: our call id for a provider's call id (`provider|<firm>|<id>`). */
  callKeys: 'call_keys',
  idempotencyKeys: 'idempotency_keys',
  /** The simulator's own records of the calls it placed (its "provider database"). */
  simulatorCalls: 'simulator_calls',
  contacts: 'contacts',
  /** Key documents: the contact holding a phone or email in a firm (`<firm>|phone|<E.164>`, `<firm>|email|<address>`). */
  contactKeys: 'contact_keys',
  /** One document per contacts import (`_id` = its job_id): progress, then the result. */
  contactImports: 'contact_imports',
} as const;

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];

export function collection<T extends Document>(db: Db, name: CollectionName): Collection<T> {
  return db.collection<T>(name);
}
