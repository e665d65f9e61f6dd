import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import {
  addCampaignLeads,
  cancelCampaign,
  createCampaign,
  launchCampaign,
  listCampaigns,
  pauseCampaign,
  resumeCampaign,
} from '../../../core/domain/campaigns/campaigns.js';
import { findCampaign, type CampaignDoc } from '../../../core/domain/campaigns/campaign-store.js';
import { dialsSettled } from '../../../core/domain/calls/dials-under-way.js';
import type { Services } from '../../../core/wiring/services.js';
import { defineRoute } from '../../route.js';
import { campaignView, draftCampaignView, viewWithCounts } from './present.js';
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

const requireCampaign = async (
  services: Services,
  principal: ApiPrincipal,
  id: string,
): Promise<CampaignDoc> => requireRecord(principal, await findCampaign(services.mongo.db, id), 'campaign');

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
    handler: async ({ services, principal, params }) => {
      const campaign = await run(services, await requireCampaign(services, principal, params.id));
      // "No call is dialled from now on": the dials under way when the state changed end first
      // (counted in calls_placed when they dialled). A resume has nothing to wait for.
      if (action !== 'resume' && campaign.status !== 'running') await dialsSettled(services, campaign._id);
      return viewWithCounts(services, campaign);
    },
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
      const { firmSlug, ...input } = body;
      const firm = await requireFirm(services.mongo.db, principal, firmSlug);
      return draftCampaignView(await createCampaign(services, firm, input));
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
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listCampaigns(services, firm._id, query.limit, query.cursor);
      return {
        campaigns: page.campaigns.map(({ campaign, counts }) => campaignView(campaign, counts)),
        next_cursor: page.next_cursor,
      };
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
      viewWithCounts(services, await requireCampaign(services, principal, params.id)),
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
      const seen = await requireCampaign(services, principal, params.id);
      const { campaign, leads_added } = await addCampaignLeads(services, seen, body);
      return draftCampaignView(campaign, leads_added);
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
    handler: async ({ services, principal, params }) =>
      launchCampaign(services, await requireCampaign(services, principal, params.id)),
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
