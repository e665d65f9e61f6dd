import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';

// The writers of one firm's document take turns under this lock, each reading the firm inside
// it: both write the whole document (firms.ts: its secrets sealed again), so one built from a
// read taken before the other's write put the other's change back. Its writers: PATCH
// /api/firms/{slug} (the settings merged into the firm as it is now) and setFirmCrm (Clio's OAuth
// confirmation, and a refresh Clio refused). A firm's creation is a claim.

/** Runs `fn` holding firm `slug`'s lock. */
export function withFirmLock<T>(
  services: Pick<Services, 'redis' | 'config'>,
  slug: string,
  fn: () => Promise<T>,
): Promise<T> {
  return withRecordLock(services.redis, redisKeys(services.config).firmLock(slug), () => fn());
}
