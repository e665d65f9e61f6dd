import { UnrecoverableError } from 'bullmq';
import type {
  CampaignCallJob,
  CampaignFanoutJob,
  CampaignPauseNoticeJob,
  CampaignWakeJob,
} from '../../jobs/campaigns.js';
import { QUEUE } from '../../jobs/queues.js';
import { abandonCampaignCall, runCampaignCall } from '../../core/domain/campaigns/campaign-calls.js';
import { fanOutCampaign } from '../../core/domain/campaigns/campaign-fanout.js';
import { pausedLot } from '../../core/domain/campaigns/campaign-store.js';
import { wakeDialWaiters } from '../../core/domain/pacing/dial-slots.js';
import { drainLot, jobRef } from '../../core/domain/pacing/parking.js';
import type { JobProcessor } from '../runner.js';
import { isFinalNoticeFailure, runPauseNotice } from '../../core/domain/campaigns/pause-notices.js';
import { SLOT_WAIT_SAFETY_MS, park, parkWhilePaused } from '../park.js';

/** Adds one campaign-call job per distinct callable phone, resumable from its checkpoint. */
export const campaignFanout: JobProcessor<CampaignFanoutJob> = async (job, { services }) =>
  fanOutCampaign(services, job.data.campaignId);

/** One lead, one attempt: waits (parked or delayed) for its turn, then creates the call. */
export const campaignCall: JobProcessor<CampaignCallJob> = async (job, { services, token, attempt }) => {
  const data = job.data;
  const waiter = jobRef(QUEUE.campaigns, job.id ?? '');
  let step;
  try {
    step = await runCampaignCall(services, data, waiter);
  } catch (err) {
    if (attempt.lastAttempt) await abandonCampaignCall(services, data);
    throw err;
  }
  switch (step.kind) {
    case 'done':
      return { outcome: step.outcome };
    case 'wait_until':
      return park(job, token, step.at, services.log);
    case 'wait_slot':
      return park(job, token, Date.now() + SLOT_WAIT_SAFETY_MS, services.log, () =>
        wakeDialWaiters(services, data.firm),
      );
    case 'paused':
      return parkWhilePaused(services, job, token, data.campaignId, waiter);
  }
};

/** After resume or cancel: wakes every job the campaign parked while paused. */
export const campaignWake: JobProcessor<CampaignWakeJob> = async (job, { services }) => ({
  woken: await drainLot(services, pausedLot(services, job.data.campaignId)),
});

/** One notice of a campaign's automatic pause (job id = campaign + pause + channel), retried on its own. */
export const campaignPauseNotice: JobProcessor<CampaignPauseNoticeJob> = async (
  job,
  { services, attempt },
) => {
  try {
    return { channel: job.data.channel, state: await runPauseNotice(services, job.data, attempt) };
  } catch (err) {
    // The notice is recorded `failed`; another attempt would only repeat the refusal.
    if (isFinalNoticeFailure(err)) throw new UnrecoverableError((err as Error).message);
    throw err;
  }
};
