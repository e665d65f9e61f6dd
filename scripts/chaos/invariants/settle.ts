// The wait before the checks: until the service has done everything it acknowledged.
import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { isScheduledRun, QUEUE, QUEUE_NAMES } from '../../../jobs/queues.js';
import type { Cluster } from '../cluster.js';
import type { Ledger } from '../ledger.js';
import type { CheckContext } from './context.js';

/** Latest due time of a reminder that should be sent during the run (not cancelled). */
function lastDueDuringRun(ledger: Ledger, offsets: number[]): number {
  let last = 0;
  for (const model of ledger.bookings.values()) {
    if (model.createdAck === undefined) continue;
    for (const offset of offsets) {
      const due = model.startMs - offset * 60_000;
      if (due <= model.createdAck.ackAt || due > Date.now() + 3600_000) continue;
      if (model.cancelAck !== undefined && due > model.cancelAck) continue;
      last = Math.max(last, due);
    }
  }
  return last;
}

/** BullMQ's keys of the states a job still to run is in: lists, then sorted sets (by id). */
const LISTED_STATES = ['wait', 'paused', 'active'] as const;
const SORTED_STATES = ['prioritized', 'waiting-children'] as const;

/**
 * Jobs still to run, by queue and state: everything waiting, active or prioritized, and delayed
 * jobs due within the next minute, or later but not reminders (a retry's backoff counts). Job
 * schedulers' runs (ids "repeat:...") do not count in any state: the dial slots' reaper runs every
 * 30 s, and a check that caught one of its runs active would count it as work left.
 */
export async function pendingJobs(cluster: Cluster): Promise<{ total: number; detail: string }> {
  let total = 0;
  const detail: string[] = [];
  const soon = (Date.now() + 60_000) * 0x1000; // BullMQ's delayed score: ms × 0x1000 + counter
  const { redis } = cluster;
  for (const name of QUEUE_NAMES) {
    const queue = cluster.queues[name];
    const delayedKey = queue.toKey('delayed');
    const byState: Array<[string, string[]]> = [
      ...(await Promise.all(
        LISTED_STATES.map(async (s) => [s, await redis.lrange(queue.toKey(s), 0, -1)] as [string, string[]]),
      )),
      ...(await Promise.all(
        SORTED_STATES.map(
          async (s) => [s, await redis.zrange(queue.toKey(s), '0', '-1')] as [string, string[]],
        ),
      )),
      [
        'delayed',
        name === QUEUE.bookings
          ? await redis.zrangebyscore(delayedKey, 0, String(soon))
          : await redis.zrange(delayedKey, '0', '-1'),
      ],
    ];
    for (const [state, ids] of byState) {
      const n = ids.filter((id) => !isScheduledRun(id)).length;
      if (n === 0) continue;
      total += n;
      detail.push(`${name} ${state} ${n}`);
    }
  }
  return { total, detail: detail.join(', ') };
}

/** Waits until the service has done all it acknowledged (or the deadline passes). */
export async function settle(ctx: CheckContext, deadlineMs: number): Promise<boolean> {
  const { cluster, ledger, timing, workload, say } = ctx;
  const until = Date.now() + deadlineMs;
  let quietPolls = 0;
  let lastSay = 0;
  await workload.copiesSettled();
  for (;;) {
    let pending = -1;
    let detail = '';
    let campaignDone = false;
    try {
      ({ total: pending, detail } = await pendingJobs(cluster));
      // Kept while Redis was down and not yet moved into the queues: work no queue shows yet.
      const kept = await cluster.db.collection(COLLECTIONS.webhookOutbox).countDocuments({});
      if (kept > 0) {
        pending += kept;
        detail = [detail, `webhook outbox ${kept}`].filter(Boolean).join(', ');
      }
      const campaign = ledger.campaign
        ? await cluster.db.collection(COLLECTIONS.campaigns).findOne({ _id: ledger.campaign.id as never })
        : null;
      campaignDone =
        ledger.campaign === undefined || ['completed', 'cancelled'].includes(String(campaign?.status));
    } catch {
      pending = -1;
    }
    const remindersDue =
      lastDueDuringRun(ledger, timing.reminderOffsets) + timing.reminderGraceMs - Date.now();
    const quiet = pending === 0 && campaignDone && remindersDue <= 0;
    quietPolls = quiet ? quietPolls + 1 : 0;
    if (quietPolls >= 2) {
      await workload.copiesSettled();
      if ((await pendingJobs(cluster)).total === 0) return true;
      quietPolls = 0;
    }
    if (Date.now() > until) return false;
    if (Date.now() - lastSay > 15_000) {
      lastSay = Date.now();
      say(
        `settling: ${pending} jobs pending${detail ? ` (${detail})` : ''}, campaign ${campaignDone ? 'done' : 'running'}` +
          (remindersDue > 0 ? `, reminders due for ${Math.ceil(remindersDue / 1000)} s more` : ''),
      );
    }
    await sleep(3000);
  }
}
