import type { Static } from '@sinclair/typebox';
import {
  readSkipped,
  type CampaignCounts,
  type SkippedByReason,
} from '../../../core/domain/campaigns/campaign-progress.js';
import { countsOf, type CampaignDoc } from '../../../core/domain/campaigns/campaign-store.js';
import { retryOn } from '../../../core/domain/campaigns/campaign-retry.js';
import type { Services } from '../../../core/wiring/services.js';
import type { AddCampaignLeadsResponse, CampaignRecord, CreateCampaignResponse } from './schema.js';

/** Why the campaign is paused, as the API shows it (a completed campaign shows none). */
function pausedReasonView(campaign: CampaignDoc): Static<typeof CampaignRecord>['paused_reason'] {
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
export function campaignView(
  campaign: CampaignDoc,
  counts: CampaignCounts,
  skipped?: SkippedByReason,
): Static<typeof CampaignRecord> {
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

/** The record with its live counters. */
export async function viewWithCounts(
  services: Services,
  campaign: CampaignDoc,
): Promise<Static<typeof CampaignRecord>> {
  const [[counts], live] = await Promise.all([
    countsOf(services, [campaign]),
    readSkipped(services, campaign._id),
  ]);
  // Redis keeps the skips 30 days after the end; the campaign keeps a copy.
  const anyLive = Object.values(live).some((n) => n > 0);
  return campaignView(campaign, counts!, anyLive ? live : (campaign.final_skipped ?? live));
}

/** A draft campaign, as creating it (and adding leads to it, with `leads_added`) answers. */
export function draftCampaignView(campaign: CampaignDoc): Static<typeof CreateCampaignResponse>;
export function draftCampaignView(
  campaign: CampaignDoc,
  leadsAdded: number,
): Static<typeof AddCampaignLeadsResponse>;
export function draftCampaignView(
  campaign: CampaignDoc,
  leadsAdded?: number,
): Static<typeof CreateCampaignResponse> | Static<typeof AddCampaignLeadsResponse> {
  return {
    id: campaign._id,
    name: campaign.name,
    // Only a draft is created, or takes leads (409 campaign_not_draft otherwise).
    status: 'draft',
    leads_total: campaign.leads_total,
    ...(leadsAdded === undefined ? {} : { leads_added: leadsAdded }),
  };
}
