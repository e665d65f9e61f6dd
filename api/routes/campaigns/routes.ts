import { requireFirm } from '../../../core/domain/access/access.js';
import {
  addCampaignLeads,
  cancelCampaign,
  createCampaign,
  launchCampaign,
  listCampaigns,
  pauseCampaign,
  resumeCampaign,
  viewWithCounts,
} from '../../../core/domain/campaigns/campaigns.js';
import { getCampaign } from '../../../core/domain/campaigns/campaign-store.js';
import { defineRoute } from '../../route.js';
import {
  AddCampaignLeadsBody,
  AddCampaignLeadsResponse,
  CampaignParams,
  CampaignRecord,
  CreateCampaignBody,
  CreateCampaignResponse,
  LaunchResponse,
  ListCampaignsQuery,
  ListCampaignsResponse,
  NoBody,
} from './schema.js';

const tag = 'Campaigns';

/** pause, resume, cancel: the same shape, each with its own state rule. */
const stateChange = (action: 'pause' | 'resume' | 'cancel', summary: string, run: typeof pauseCampaign) =>
  defineRoute({
    method: 'POST',
    path: `/api/leads/campaigns/{id}/${action}`,
    operationId: `${action}Campaign`,
    summary,
    tag,
    auth: { kind: 'token' },
    params: CampaignParams,
    body: NoBody,
    response: CampaignRecord,
    errors: [404, 409],
    handler: async ({ services, principal, params }) =>
      viewWithCounts(services, await run(services, principal, params.id)),
  });

export const campaignRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/leads/campaigns',
    operationId: 'createCampaign',
    summary:
      'Create a draft campaign of the firm\'s agent with inline leads (created with source "campaign") and/or the firm\'s leads by id',
    tag,
    auth: { kind: 'token' },
    body: CreateCampaignBody,
    response: CreateCampaignResponse,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body }) => {
      const campaign = await createCampaign(services, principal, body);
      return {
        id: campaign._id,
        name: campaign.name,
        status: 'draft' as const,
        leads_total: campaign.leads_total,
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/leads/campaigns',
    operationId: 'listCampaigns',
    summary: "A firm's campaigns with their counters, newest first; keyset pagination with an opaque cursor",
    tag,
    auth: { kind: 'token' },
    query: ListCampaignsQuery,
    response: ListCampaignsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      await requireFirm(services.mongo.db, principal, query.firmSlug);
      return listCampaigns(services, query.firmSlug, query.limit ?? 50, query.cursor);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/leads/campaigns/{id}',
    operationId: 'getCampaign',
    summary: 'Read one campaign with its live counters',
    tag,
    auth: { kind: 'token' },
    params: CampaignParams,
    response: CampaignRecord,
    errors: [404],
    handler: async ({ services, principal, params }) =>
      viewWithCounts(services, await getCampaign(services.mongo.db, principal, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/api/leads/campaigns/{id}/leads',
    operationId: 'addCampaignLeads',
    summary: 'Add leads to a draft campaign (409 campaign_not_draft once launched)',
    tag,
    auth: { kind: 'token' },
    params: CampaignParams,
    body: AddCampaignLeadsBody,
    response: AddCampaignLeadsResponse,
    errors: [404, 409],
    handler: async ({ services, principal, params, body }) => {
      const { campaign, leads_added } = await addCampaignLeads(services, principal, params.id, body);
      return {
        id: campaign._id,
        name: campaign.name,
        status: 'draft' as const,
        leads_total: campaign.leads_total,
        leads_added,
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/leads/campaigns/{id}/launch',
    operationId: 'launchCampaign',
    summary:
      'Launch a draft campaign: one call per distinct callable phone is queued and placed by workers, paced (409 campaign_already_launched)',
    tag,
    auth: { kind: 'token' },
    params: CampaignParams,
    body: NoBody,
    response: LaunchResponse,
    errors: [404, 409],
    handler: async ({ services, principal, params }) => launchCampaign(services, principal, params.id),
  }),
  stateChange(
    'pause',
    'Pause a running campaign: no new calls until resumed; calls in progress finish (409 campaign_not_launched, campaign_finished)',
    pauseCampaign,
  ),
  stateChange(
    'resume',
    'Resume a paused campaign (409 campaign_not_launched, campaign_finished)',
    resumeCampaign,
  ),
  stateChange(
    'cancel',
    'Cancel a campaign for good: no new calls; calls in progress finish (409 campaign_finished when completed)',
    cancelCampaign,
  ),
];
