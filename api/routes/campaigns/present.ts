import type { Static } from '@sinclair/typebox';
import type { CampaignCounts, SkippedByReason } from '../../../core/domain/campaigns/campaign-progress.js';
import type { CampaignDoc } from '../../../core/domain/campaigns/campaign-store.js';
import {
  campaignView as publicCampaign,
  viewWithCounts as publicCampaignWithCounts,
} from '../../../core/domain/campaigns/campaign-view.js';
import type { Services } from '../../../core/wiring/services.js';
import type { AddCampaignLeadsResponse, CampaignRecord, CreateCampaignResponse } from './schema.js';

/** The campaign record as the API shows it (the shape campaign.* events carry too). */
export const campaignView: (
  campaign: CampaignDoc,
  counts: CampaignCounts,
  skipped?: SkippedByReason,
) => Static<typeof CampaignRecord> = publicCampaign;

/** The record with its live counters. */
export const viewWithCounts: (
  services: Services,
  campaign: CampaignDoc,
) => Promise<Static<typeof CampaignRecord>> = publicCampaignWithCounts;

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
