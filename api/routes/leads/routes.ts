import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import { createApiLead, findLead, listLeads } from '../../../core/domain/leads/leads.js';
import { recordEvent } from '../../../core/domain/events/record-event.js';
import { defineRoute } from '../../route.js';
import { leadView } from './present.js';
import { CreateLeadBody, LeadParams, LeadRecord, ListLeadsQuery, ListLeadsResponse } from './schema.js';

const tag = 'Leads';

export const leadRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/leads',
    operationId: 'createLead',
    summary: 'Create a lead (source "api"); phone stored in E.164',
    tag,
    auth: { kind: 'token' },
    body: CreateLeadBody,
    response: LeadRecord,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      const { firmSlug, ...fields } = body;
      const firm = await requireFirm(services.mongo.db, principal, firmSlug);
      const lead = await createApiLead(services.mongo.db, firm._id, fields);
      const view = leadView(lead);
      await recordEvent(services, {
        firm: firm._id,
        type: 'lead.created',
        subject: lead._id,
        key: 'created',
        occurred_at: lead.created_at,
        data: view,
      });
      return view;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/leads',
    operationId: 'listLeads',
    summary: "A firm's leads, newest first; keyset pagination with an opaque cursor",
    tag,
    auth: { kind: 'token' },
    query: ListLeadsQuery,
    response: ListLeadsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listLeads(
        services.mongo.db,
        services.config.sessionSecret,
        firm._id,
        query.limit,
        query.cursor,
      );
      return { leads: page.leads.map(leadView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/leads/{id}',
    operationId: 'getLead',
    summary: 'Read one lead',
    tag,
    auth: { kind: 'token' },
    params: LeadParams,
    response: LeadRecord,
    errors: [404],
    handler: async ({ services, principal, params }) =>
      leadView(requireRecord(principal, await findLead(services.mongo.db, params.id), 'lead')),
  }),
];
