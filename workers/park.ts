import { DelayedError, type Job } from 'bullmq';
import type { Logger } from '../core/platform/logger.js';
import type { Services } from '../core/wiring/services.js';
import { findCampaign, pausedLot } from '../core/domain/campaigns/campaign-store.js';
import { parkInLot, unparkOne } from '../core/domain/pacing/parking.js';

// A job that cannot go on yet moves itself to BullMQ's delayed set (holding no worker slot)
// until `until`; parked jobs (core/domain/pacing/parking.ts) are woken earlier by promotion.
// `afterParked` takes a second look once the job is delayed — the way may have opened between
// the first look and the move, with nobody left to wake it — and unparks it if so.

export async function park(
  job: Job,
  token: string | undefined,
  until: number,
  log: Logger,
  afterParked?: () => Promise<unknown>,
): Promise<never> {
  await job.moveToDelayed(Math.max(until, Date.now()), token);
  if (afterParked !== undefined) {
    await afterParked().catch((err: unknown) =>
      log.warn(
        { err, jobId: job.id },
        'a parked job could not take its second look; its safety delay wakes it',
      ),
    );
  }
  throw new DelayedError();
}

/** How long a job waiting for a dial slot sleeps if no release wakes it (the reaper runs every 30 s). */
export const SLOT_WAIT_SAFETY_MS = 15 * 60_000;
/** How long a job of a paused campaign sleeps if no resume wakes it. */
export const PAUSE_SAFETY_MS = 60 * 60_000;

/**
 * Parks a job of a paused campaign in the campaign's lot (its resume or cancel wakes the lot);
 * the second look unparks it at once if the campaign is no longer paused. Campaign-call jobs and
 * the place-call jobs of campaign calls both wait so.
 */
export async function parkWhilePaused(
  services: Services,
  job: Job,
  token: string | undefined,
  campaignId: string,
  waiter: string,
): Promise<never> {
  const lot = pausedLot(services, campaignId);
  await parkInLot(services, lot, waiter);
  return park(job, token, Date.now() + PAUSE_SAFETY_MS, services.log, async () => {
    const campaign = await findCampaign(services.mongo.db, campaignId);
    if (campaign?.status !== 'paused') await unparkOne(services, lot, waiter);
  });
}
