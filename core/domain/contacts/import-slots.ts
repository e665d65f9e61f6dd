import type { Services } from '../../wiring/services.js';
import { rateLimited } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';

// How many contacts imports one firm may have waiting (docs/contacts.md#limits): each holds up
// to 16 MiB of staged rows until a worker has done it, so one firm's key could otherwise fill
// the store for every firm. An import takes a slot (a member of a per-firm sorted set, in one
// script call) before anything is stored, and gives it back when it completes, fails or is
// not accepted. An entry lapses on its own after SLOT_LAPSE_MS, so a slot whose release was
// lost (a process killed at the wrong moment) frees itself.

const TAKE = loadRedisScript(new URL('./take-import-slot.lua', import.meta.url), {
  keys: ['pending'],
  args: ['member', 'now', 'lapse_at', 'max'],
});

/** How long a pending import holds its slot at most (a worker backlog longer than this lets more in). */
const SLOT_LAPSE_MS = 3_600_000;
/** What a refused import is told to wait: pending imports end as the workers reach them. */
const RETRY_AFTER_S = 30;

const pendingKey = (services: Services, firm: string) =>
  redisKeys(services.config).contactsImportsPending(firm);

/** Takes one of the firm's pending-import slots for `importId`; 429 when the firm has none free. */
export async function takeImportSlot(services: Services, firm: string, importId: string): Promise<void> {
  const now = Date.now();
  const max = services.config.contactsImportMaxPending;
  const taken = await TAKE.run(
    services.redis,
    { pending: pendingKey(services, firm) },
    { member: importId, now, lapse_at: now + SLOT_LAPSE_MS, max },
  );
  if (taken === 1) return;
  throw rateLimited(
    `This firm has ${max} contacts imports waiting to be processed already; send this one when one of them has finished.`,
    RETRY_AFTER_S,
  );
}

/** Gives the import's slot back (done, failed or not accepted). Safe to repeat. */
export async function releaseImportSlot(services: Services, firm: string, importId: string): Promise<void> {
  await services.redis.zrem(pendingKey(services, firm), importId);
}
