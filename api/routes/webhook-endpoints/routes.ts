import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import {
  createEndpoint,
  deleteEndpoint,
  findEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
  type WebhookEndpointDoc,
} from '../../../core/domain/events/endpoints.js';
import {
  MAX_REPLAY_EVENTS,
  deliveryIdOf,
  failingSince,
  findDelivery,
  listDeliveries,
  retryDelivery,
  sendPing,
} from '../../../core/domain/events/deliveries.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { clock } from '../../../core/platform/clock.js';
import { conflict, invalidRequest, notFound } from '../../../core/platform/errors.js';
import { newId } from '../../../core/platform/ids.js';
import type { Services } from '../../../core/wiring/services.js';
import { defineRoute } from '../../route.js';
import { deliveryView, endpointView } from './present.js';
import {
  CreateEndpointBody,
  DeleteEndpointResponse,
  DeliveryParams,
  DeliveryRecord,
  EndpointParams,
  EndpointRecord,
  EndpointWithSecret,
  ListDeliveriesQuery,
  ListDeliveriesResponse,
  ListEndpointsQuery,
  ListEndpointsResponse,
  NoBody,
  ReplayBody,
  ReplayResponse,
  UpdateEndpointBody,
} from './schema.js';

const tag = 'Webhook endpoints';

/** An endpoint by id; another firm's answers 404 as a missing one does. */
const requireEndpoint = async (
  services: Services,
  principal: ApiPrincipal,
  id: string,
): Promise<WebhookEndpointDoc> =>
  requireRecord(principal, await findEndpoint(services.mongo.db, id), 'webhook_endpoint');

const gone = () => notFound('webhook_endpoint');

/** Endpoints as the API shows them, each with its failing streak (kept in Redis). */
async function views(services: Services, endpoints: WebhookEndpointDoc[]) {
  const now = clock.now();
  const failing = await failingSince(services, endpoints);
  return endpoints.map((e, i) => endpointView(e, now, failing[i] ?? null));
}
const view = async (services: Services, endpoint: WebhookEndpointDoc) =>
  (await views(services, [endpoint]))[0]!;

export const webhookEndpointRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/webhook-endpoints',
    operationId: 'createWebhookEndpoint',
    summary:
      "Subscribe a URL to the firm's events (at most 20 endpoints a firm); the signing secret (whsec_…) is in this answer only",
    tag,
    auth: { kind: 'token' },
    body: CreateEndpointBody,
    response: EndpointWithSecret,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body }) => {
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { endpoint, secret } = await createEndpoint(services, firm._id, {
        url: body.url,
        events: body.events,
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
      });
      return { ...endpointView(endpoint, clock.now()), secret };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    summary: "The firm's webhook endpoints, newest first (at most 20; no secrets)",
    tag,
    auth: { kind: 'token' },
    query: ListEndpointsQuery,
    response: ListEndpointsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      return {
        endpoints: await views(services, await listEndpoints(services.mongo.db, firm._id)),
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/webhook-endpoints/{id}',
    operationId: 'getWebhookEndpoint',
    summary: 'Read one webhook endpoint (no secret)',
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    response: EndpointRecord,
    errors: [404],
    handler: async ({ services, principal, params }) =>
      view(services, await requireEndpoint(services, principal, params.id)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/api/webhook-endpoints/{id}',
    operationId: 'updateWebhookEndpoint',
    summary:
      'Change the URL, the events, the description, or enable/disable the endpoint (enabling clears why it was disabled)',
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    body: UpdateEndpointBody,
    response: EndpointRecord,
    errors: [404],
    handler: async ({ services, principal, params, body }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      const updated = await updateEndpoint(services, endpoint, {
        ...(body.url === undefined ? {} : { url: body.url }),
        ...(body.events === undefined ? {} : { events: body.events }),
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
      });
      if (updated === null) throw gone();
      return view(services, updated);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/webhook-endpoints/{id}',
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint: nothing more is sent to it (its pending deliveries are skipped)',
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    response: DeleteEndpointResponse,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      await deleteEndpoint(services, endpoint);
      return { id: endpoint._id, deleted: true as const };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/webhook-endpoints/{id}/rotate-secret',
    operationId: 'rotateWebhookEndpointSecret',
    summary:
      'A new signing secret, shown this once; deliveries are signed with both the new and the previous secret for 24 hours',
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    body: NoBody,
    response: EndpointWithSecret,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      const rotated = await rotateSecret(services, endpoint);
      if (rotated === null) throw gone();
      return { ...endpointView(rotated.endpoint, clock.now()), secret: rotated.secret };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/webhook-endpoints/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    summary:
      "The endpoint's deliveries, newest first, each with its attempts (time, status, duration, the answer's first 2 KB) and next retry; keyset pages",
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    query: ListDeliveriesQuery,
    response: ListDeliveriesResponse,
    errors: [404],
    handler: async ({ services, principal, params, query }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      const page = await listDeliveries(services, endpoint, query.limit, query.cursor);
      return { deliveries: page.deliveries.map(deliveryView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/webhook-endpoints/{id}/deliveries/{deliveryId}/retry',
    operationId: 'retryWebhookDelivery',
    summary:
      'Try a delivery again now: a pending one at once, a failed or skipped one anew (409 endpoint_disabled while the endpoint is disabled)',
    tag,
    auth: { kind: 'token' },
    params: DeliveryParams,
    body: NoBody,
    response: DeliveryRecord,
    errors: [404, 409],
    handler: async ({ services, principal, params }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      const id = deliveryIdOf(params.deliveryId);
      const delivery = id === null ? null : await findDelivery(services.mongo.db, id);
      if (delivery === null || delivery.endpoint !== endpoint._id) throw notFound('delivery');
      if (!endpoint.enabled) throw endpointDisabled();
      return deliveryView(await retryDelivery(services, delivery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/webhook-endpoints/{id}/replay',
    operationId: 'replayWebhookEvents',
    summary: `Re-send the endpoint's events that occurred in [from, to), in order, with their original ids (at most ${MAX_REPLAY_EVENTS.toLocaleString('en-US')} a replay)`,
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    body: ReplayBody,
    response: ReplayResponse,
    errors: [404, 409],
    handler: async ({ services, principal, params, body }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      const from = new Date(body.from);
      const to = new Date(body.to);
      if (!(from.getTime() < to.getTime())) {
        throw invalidRequest('from must be before to.', [{ path: '/to', message: 'must be after from' }]);
      }
      if (!endpoint.enabled) throw endpointDisabled();
      const replay = newId('rpl', 9);
      await enqueue(services.queues, JOBS.webhookReplay, {
        endpoint: endpoint._id,
        firm: endpoint.firm,
        replay,
        from: from.toISOString(),
        to: to.toISOString(),
      });
      return {
        replay_id: replay,
        endpoint_id: endpoint._id,
        from: from.toISOString(),
        to: to.toISOString(),
        max_events: MAX_REPLAY_EVENTS,
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/webhook-endpoints/{id}/test',
    operationId: 'testWebhookEndpoint',
    summary: 'Send a signed `ping` to the endpoint, delivered and logged like an event',
    tag,
    auth: { kind: 'token' },
    params: EndpointParams,
    body: NoBody,
    response: DeliveryRecord,
    errors: [404, 409],
    handler: async ({ services, principal, params }) => {
      const endpoint = await requireEndpoint(services, principal, params.id);
      if (!endpoint.enabled) throw endpointDisabled();
      return deliveryView(await sendPing(services, endpoint));
    },
  }),
];

const endpointDisabled = () =>
  conflict('endpoint_disabled', 'The endpoint is disabled; enable it first (PATCH {"enabled": true}).');
