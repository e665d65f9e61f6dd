import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import { registerApiLead, replayedApiLead } from '../../../core/domain/leads/create-api-lead.js';
import { findLead, listLeads } from '../../../core/domain/leads/leads.js';
import { idempotencyKeyOf } from '../../idempotency-header.js';
import { IdempotencyKeyHeader } from '../../schemas/common.js';
import { defineRoute } from '../../route.js';
import { leadView } from './present.js';
import { CreateLeadBody, LeadParams, LeadRecord, ListLeadsQuery, ListLeadsResponse } from './schema.js';

const tag = 'Leads';

export const leadRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/leads',
    operationId: 'createLead',
    summary:
      'Create a lead (source "api"); phone stored in E.164. Optional Idempotency-Key header: a repeat within 24 h answers the same lead and makes none',
    tag,
    auth: { kind: 'token' },
    body: CreateLeadBody,
    requestHeaders: IdempotencyKeyHeader,
    response: LeadRecord,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body, koa }) => {
      const idempotencyKey = idempotencyKeyOf(koa);
      const { firmSlug, ...fields } = body;
      const firm = await requireFirm(services.mongo.db, principal, firmSlug);
      // A repeat answers before its body is checked again against what may have changed since.
      const replayed =
        idempotencyKey === undefined ? null : await replayedApiLead(services, firm._id, idempotencyKey);
      if (replayed !== null) {
        koa.set('Idempotent-Replayed', 'true');
        return leadView(replayed);
      }
      const { lead, repeated } = await registerApiLead(services, firm._id, fields, idempotencyKey);
      if (repeated) koa.set('Idempotent-Replayed', 'true');
      return leadView(lead);
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
