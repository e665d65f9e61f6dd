import type { Services } from '../../wiring/services.js';
import { withRedisMutex } from '../../platform/redis-mutex.js';

// Writers of one call record (the place-call job, the call-event jobs) take turns. MongoDB
// would not need this, but FerretDB (tests, local) rewrites the whole document on update from
// what it read, so two concurrent updates of one call could each undo the other's fields.

const LOCK_TTL_MS = 30_000;
const WAIT_MS = 10_000;

export class CallBusyError extends Error {
  constructor(key: string) {
    super(`The call ${key} is being updated elsewhere; retrying.`);
    this.name = 'CallBusyError';
  }
}

/** Runs `fn` holding the lock of the call identified by `key` (our call id, else the provider's). */
export async function withCallLock<T>(
  services: Services,
  firm: string,
  key: string,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = `${services.config.queuePrefix}:lock:call:${firm}:${key}`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const result = await withRedisMutex(services.redis, lock, LOCK_TTL_MS, fn);
    if (result.acquired) return result.value;
    if (Date.now() > deadline) throw new CallBusyError(key);
    await new Promise((r) => setTimeout(r, 10 + Math.floor(Math.random() * 40)));
  }
}
