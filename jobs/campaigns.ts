import { QUEUE } from './queues.js';
import { RETRY_AFTER, capped } from './backoff.js';
import { defineJob, jobId } from './define.js';

/**
 * Fans a launched campaign out into one campaign-call job per distinct phone (job id = campaign +
 * launch).
 */
export interface CampaignFanoutJob {
  campaignId: string;
  firm: string;
  /**
   * The launch it carries on: its claim's time (ms). Each launch its own job: a launch retried
   * while the fan-out of one withdrawn is still running (to end "not launched") is not folded
   * into that job. Absent on a job of an earlier release (the campaign's id alone).
   */
  launch?: string;
}

/**
 * One lead (one distinct phone) of a campaign, one attempt: waits for the campaign to run, for
 * the calling window and for a dial slot, then creates the call (job id = campaign + phone + attempt).
 */
export interface CampaignCallJob {
  campaignId: string;
  firm: string;
  /** E.164; the campaign's phone `<campaign>|<phone>` (CampaignPhoneDoc) holds the rest. */
  phone: string;
  /** 1 for the first call; 2 and 3 retry a lead that was not_connected. */
  attempt: number;
}

/** Wakes the campaign's jobs parked while it was paused (after resume or cancel). */
export interface CampaignWakeJob {
  campaignId: string;
  firm: string;
  /** Distinguishes one resume from the next (a wake job per state change). */
  at: number;
}

/** One notice (mail or Slack) of a campaign's automatic pause by the kill switch (job id = campaign + pause + channel). */
export interface CampaignPauseNoticeJob {
  campaignId: string;
  firm: string;
  /** The pause's number on the campaign (`<campaign>|pause|<n>`). */
  pause: number;
  channel: 'email' | 'team_chat';
}

export const campaignJobs = {
  campaignFanout: defineJob<CampaignFanoutJob>({
    queue: QUEUE.campaigns,
    name: 'campaign-fanout',
    id: (job) =>
      job.launch === undefined
        ? jobId('fanout', job.campaignId)
        : jobId('fanout', job.campaignId, job.launch),
    // Its failures are the service's own (MongoDB, Redis down): retried within seconds of their
    // end for about an hour (jobs/backoff.ts). With the default 8 attempts (about 2 minutes) a
    // longer outage failed it for good and left the campaign running with nothing to call.
    options: capped(),
  }),
  campaignCall: defineJob<CampaignCallJob>({
    queue: QUEUE.campaigns,
    name: 'campaign-call',
    id: (job) => jobId('cc', job.campaignId, job.phone, String(job.attempt)),
    // Tens of thousands per campaign: the queue's short history (jobs/queues.ts) is enough, the
    // calls are the durable record. Its failures are the service's own too (a refusal of the
    // call settles the lead instead): an outage of up to about an hour neither settles its lead
    // uncalled nor, with the store still down at the last attempt, leaves it never settled.
    options: capped(),
  }),
  campaignWake: defineJob<CampaignWakeJob>({
    queue: QUEUE.campaigns,
    name: 'campaign-wake',
    id: (job) => jobId('wake', job.campaignId, String(job.at)),
    options: capped(),
  }),
  campaignPauseNotice: defineJob<CampaignPauseNoticeJob>({
    queue: QUEUE.campaigns,
    name: 'campaign-pause-notice',
    id: (job) => jobId('pause-notice', job.campaignId, String(job.pause), job.channel),
    // As a call's notices: about an hour of retries (the first delay CALL_EFFECT_RETRY_MS).
    options: { attempts: 12, backoff: { type: RETRY_AFTER, delay: 2000 } },
  }),
};
