import type { Services } from '../../wiring/services.js';

// Asking a worker to rebuild a firm's copy in Redis (its do-not-call index, its dial attempts)
// when a request finds the copy's ready mark missing. The job is one per firm (its id) anyway;
// a process asks at most once per REBUILD_ASKED_MS for a mark, so that every request made while
// the rebuild runs does not add a round trip of its own.

const REBUILD_ASKED_MS = 5_000;
/** Ready marks (full Redis keys, so under their queue prefix) asked for, and when. */
const asked = new Map<string, number>();

/** Asks once in a while for the rebuild behind `markKey` (`add` enqueues it); never throws. */
export function askForRebuild(
  services: Services,
  markKey: string,
  add: () => Promise<unknown>,
  what: string,
): void {
  const now = Date.now();
  const at = asked.get(markKey);
  if (at !== undefined && now - at < REBUILD_ASKED_MS) return;
  if (asked.size >= 10_000) asked.clear();
  asked.set(markKey, now);
  add().catch((err: unknown) => {
    asked.delete(markKey);
    services.log.warn({ err, mark: markKey }, `could not ask for the rebuild of ${what}`);
  });
}
