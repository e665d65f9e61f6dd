import type { Static } from '@sinclair/typebox';
import type { WebhookEndpointDoc } from '../../../core/domain/events/endpoints.js';
import { publicDeliveryId, type DeliveryDoc } from '../../../core/domain/events/deliveries.js';
import type { DeliveryRecord, EndpointRecord } from './schema.js';

const iso = (at: Date | null | undefined): string | null =>
  at === null || at === undefined ? null : at.toISOString();

export function endpointView(
  e: WebhookEndpointDoc,
  now: number,
  failing: Date | null = e.failing_since,
): Static<typeof EndpointRecord> {
  return {
    id: e._id,
    firm: e.firm,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    disabled_at: iso(e.disabled_at),
    failing_since: iso(failing),
    previous_secret_valid_until:
      e.previous_secret_until !== null && e.previous_secret_until.getTime() > now
        ? e.previous_secret_until.toISOString()
        : null,
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
  };
}

export function deliveryView(d: DeliveryDoc): Static<typeof DeliveryRecord> {
  return {
    id: publicDeliveryId(d._id),
    endpoint_id: d.endpoint,
    kind: d.kind,
    event_id: d.event_id,
    type: d.type,
    subject: d.subject,
    occurred_at: d.occurred_at.toISOString(),
    status: d.status,
    reason: d.reason,
    out_of_order: d.out_of_order,
    attempts: d.attempts.map((a) => ({
      at: a.at.toISOString(),
      status_code: a.status_code,
      duration_ms: a.duration_ms,
      response_body: a.response_body,
      error: a.error,
      next_retry_at: iso(a.next_retry_at),
    })),
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    created_at: d.created_at.toISOString(),
    settled_at: iso(d.settled_at),
  };
}
