import type { Services } from '../../wiring/services.js';
import { rateLimited } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';

// How much one firm's contacts imports may hold while they wait (docs/contacts.md#limits): each
// keeps its staged rows in the store until a worker has done it, so one firm could otherwise
// fill the store for every firm. The bound is on what they hold, the bytes of their staged rows
// (CONTACTS_IMPORT_MAX_PENDING_BYTES, four bodies of 16 MiB by default), not on how many they
// are: many small imports at once are let in. Their number has a bound too
// (CONTACTS_IMPORT_MAX_PENDING), a guard on the work of the script that counts them.
//
// An import takes a slot (a member `<import id>:<bytes>` of a per-firm sorted set, in one script
// call) before anything is stored, and gives it back when it completes, fails or is not
// accepted, by its id alone (the worker that completes it does not know its size). An entry
// lapses on its own after SLOT_LAPSE_MS, so a slot whose release was lost (a process killed at
// the wrong moment) frees itself. One key, used alone: nothing to tag on a cluster.

const TAKE = loadRedisScript(new URL('./take-import-slot.lua', import.meta.url), {
  keys: ['pending'],
  args: ['import_id', 'bytes', 'now', 'lapse_at', 'max_count', 'max_bytes', 'unknown_bytes'],
});
const RELEASE = loadRedisScript(new URL('./release-import-slot.lua', import.meta.url), {
  keys: ['pending'],
  args: ['import_id'],
});

/** How long a pending import holds its slot at most (a worker backlog longer than this lets more in). */
export const SLOT_LAPSE_MS = 3_600_000;
/** What a refused import is told to wait: pending imports end as the workers reach them. */
const RETRY_AFTER_S = 30;
/**
 * What an entry written before entries carried their size counts as: the most one import
 * could hold then (the route's 16 MiB body). Such entries lapse within SLOT_LAPSE_MS of a deploy.
 */
const UNKNOWN_ENTRY_BYTES = 16 * 1024 * 1024;

const pendingKey = (services: Services, firm: string) =>
  redisKeys(services.config).contactsImportsPending(firm);

/** The bytes of an import's staged rows (its pieces of JSON text, as UTF-8). */
export const stagedBytes = (parts: readonly string[]): number =>
  parts.reduce((sum, part) => sum + Buffer.byteLength(part, 'utf8'), 0);

const size = (bytes: number): string =>
  bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MiB`
    : bytes >= 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${bytes} bytes`;

/**
 * Takes a pending-import slot for `importId`, whose staged rows are `bytes` long; 429 when the
 * firm's pending imports hold too many bytes for it to fit, or are as many as may be.
 */
export async function takeImportSlot(
  services: Services,
  firm: string,
  importId: string,
  bytes: number,
): Promise<void> {
  const now = Date.now();
  const maxCount = services.config.contactsImportMaxPending;
  const maxBytes = services.config.contactsImportMaxPendingBytes;
  const [verdict, entries, held] = (await TAKE.run(
    services.redis,
    { pending: pendingKey(services, firm) },
    {
      import_id: importId,
      bytes,
      now,
      lapse_at: now + SLOT_LAPSE_MS,
      max_count: maxCount,
      max_bytes: maxBytes,
      unknown_bytes: UNKNOWN_ENTRY_BYTES,
    },
  )) as [string, number, number];
  if (verdict === 'ok') return;
  if (verdict === 'bytes') {
    throw rateLimited(
      `This firm's ${entries} contacts imports waiting to be processed hold ${size(held)} of rows already; ` +
        `with this one's ${size(bytes)} they would pass their size limit of ${size(maxBytes)}. ` +
        'Send it when one of them has finished.',
      RETRY_AFTER_S,
    );
  }
  throw rateLimited(
    `This firm has ${entries} contacts imports waiting to be processed already, the most it may have ` +
      '(a limit on their number); send this one when one of them has finished.',
    RETRY_AFTER_S,
  );
}

/** Gives the import's slot back (done, failed or not accepted). Safe to repeat. */
export async function releaseImportSlot(services: Services, firm: string, importId: string): Promise<void> {
  await RELEASE.run(services.redis, { pending: pendingKey(services, firm) }, { import_id: importId });
}
