import type { Services } from '../../wiring/services.js';
import { QUEUE_NAMES, type QueueName } from '../../../jobs/queues.js';

// Parked jobs: a job that cannot go on yet (no dial slot for its firm, its campaign paused)
// moves itself to BullMQ's delayed set with a long safety delay and leaves a reference in a
// Redis sorted set (a "lot", oldest first). Whoever frees the way (a call's end, a resume)
// wakes the oldest parked jobs by promoting them, so waiting costs nothing while it lasts —
// no polling — and a lost wake-up only costs the safety delay.

/** A parked job's reference in a lot: its queue and job id. */
export const jobRef = (queue: QueueName, jobId: string): string => `${queue}\t${jobId}`;

function parseRef(ref: string): { queue: QueueName; id: string } | null {
  const tab = ref.indexOf('\t');
  const queue = ref.slice(0, tab) as QueueName;
  if (tab < 1 || !QUEUE_NAMES.includes(queue)) return null;
  return { queue, id: ref.slice(tab + 1) };
}

/**
 * Promotes the parked jobs `refs` (delayed → waiting). A job still active (it has not parked
 * yet: it is between finding the way shut and moving itself to delayed) is handed to `repark`,
 * so the wake-up is not lost; jobs that are gone or already waiting are skipped.
 * Returns how many were promoted.
 */
export async function promoteParked(
  services: Services,
  refs: string[],
  repark: (ref: string) => Promise<void>,
): Promise<number> {
  let promoted = 0;
  for (const ref of refs) {
    const parsed = parseRef(ref);
    if (parsed === null) continue;
    const job = await services.queues[parsed.queue].getJob(parsed.id);
    if (job === undefined || job === null) continue;
    try {
      await job.promote();
      promoted += 1;
    } catch {
      const state = await job.getState();
      if (state === 'active') await repark(ref);
      else if (state === 'delayed') {
        // It parked between our attempt and the state read.
        await job.promote().then(
          () => (promoted += 1),
          () => undefined,
        );
      }
    }
  }
  return promoted;
}

/** Adds a job to a lot (keeps its place when it is there already). */
export async function parkInLot(services: Services, lot: string, ref: string): Promise<void> {
  await services.redis.zadd(lot, 'NX', Date.now(), ref);
}

/** Takes one job out of a lot and promotes it (a parked job that finds the way open after all). */
export async function unparkOne(services: Services, lot: string, ref: string): Promise<void> {
  if ((await services.redis.zrem(lot, ref)) === 0) return; // someone else woke it
  await promoteParked(services, [ref], async () => undefined);
}

/** Wakes every job of a lot, oldest first, in chunks; returns how many were promoted. */
export async function drainLot(services: Services, lot: string, chunk = 500): Promise<number> {
  let promoted = 0;
  // Jobs not parked yet go back once the lot is empty (else this loop would meet them again);
  // when they park they look at the way themselves and unpark at once if it is open.
  const stillActive: string[] = [];
  for (;;) {
    const popped = await services.redis.zpopmin(lot, chunk);
    if (popped.length === 0) break;
    const refs = popped.filter((_, i) => i % 2 === 0);
    promoted += await promoteParked(services, refs, async (ref) => void stillActive.push(ref));
  }
  for (const ref of stillActive) await parkInLot(services, lot, ref);
  return promoted;
}
