import {
  readSkipped,
  readWaiting,
  type CampaignCounts,
  type CampaignWaiting,
  type SkippedByReason,
} from './campaign-progress.js';
import { clock } from '../../platform/clock.js';
import { countsOf, type CampaignDoc } from './campaign-store.js';
import { retryOn } from './campaign-retry.js';
import type { Services } from '../../wiring/services.js';

// The campaign record's public shape: what the campaign routes answer and what campaign.* events
// carry (docs/events.md).

/** Why the campaign is paused, as the API shows it (a completed campaign shows none). */
function pausedReasonView(campaign: CampaignDoc) {
  const reason = campaign.paused_reason;
  if (reason === undefined || reason === null) return null;
  if (campaign.status !== 'paused' && campaign.status !== 'cancelled') return null;
  return {
    code: reason.code,
    message: reason.message,
    observed: reason.observed,
    threshold: reason.threshold,
    at: reason.at.toISOString(),
  };
}

/** The campaign record as the API shows it. */
export function campaignView(campaign: CampaignDoc, counts: CampaignCounts, skipped?: SkippedByReason) {
  return {
    id: campaign._id,
    name: campaign.name,
    firm: campaign.firm,
    agent_id: campaign.agent_id,
    status: campaign.status,
    leads_total: campaign.leads_total,
    calls_queued: campaign.calls_queued,
    calls_placed: counts.calls_placed,
    calls_completed: counts.calls_completed,
    calls_failed: counts.calls_failed,
    retry_on: retryOn(campaign),
    skip_known_clients: campaign.skip_known_clients === true,
    purpose: campaign.purpose ?? 'marketing',
    ...(skipped === undefined ? {} : { skipped_by_reason: skipped }),
    known_clients_skipped: campaign.known_clients_skipped ?? 0,
    paused_reason: pausedReasonView(campaign),
    launched_at: campaign.launched_at === null ? null : campaign.launched_at.toISOString(),
    created_at: campaign.created_at.toISOString(),
  };
}

/**
 * The record with its live counters (GET of one campaign, the campaign.* events), and its leads
 * the dial gate holds until a later time (the callee's hours, the firm's calling window, the
 * number's attempts) with the earliest: a running campaign with nothing placed yet says why. None
 * held once it has ended.
 */
export async function viewWithCounts(services: Services, campaign: CampaignDoc) {
  const live = campaign.status === 'running' || campaign.status === 'paused';
  const [[counts], skipped, waiting] = await Promise.all([
    countsOf(services, [campaign]),
    readSkipped(services, campaign._id),
    live
      ? readWaiting(services, campaign._id, clock.now())
      : Promise.resolve<CampaignWaiting>({ calls_waiting: 0, next_allowed_at: null }),
  ]);
  // Redis keeps the skips 30 days after the end; the campaign keeps a copy.
  const anyLive = Object.values(skipped).some((n) => n > 0);
  return {
    ...campaignView(campaign, counts!, anyLive ? skipped : (campaign.final_skipped ?? skipped)),
    ...waiting,
  };
}
