import { Type } from '@sinclair/typebox';
import { Body, Cursor, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'https:// to a public host (http:// and loopback hosts only with ALLOW_PRIVATE_URLS)',
});
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  minItems: 1,
  maxItems: 50,
  description: 'Event types to deliver: a type (lead.created), a wildcard (call.*), or * for every type',
});
const Description = Type.String({ maxLength: 500 });

export const EndpointParams = Type.Object({ id: Id });
export const DeliveryParams = Type.Object({
  id: Id,
  deliveryId: Type.String({ minLength: 5, maxLength: 600, description: 'A delivery id (dlv_…)' }),
});

export const CreateEndpointBody = Body({
  firmSlug: FirmSlug,
  url: Url,
  events: Events,
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean({ default: true })),
});

export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ListEndpointsQuery = Type.Object({ firmSlug: ListFirmSlug });

export const EndpointRecord = Type.Object({
  id: Type.String(),
  firm: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(
    Type.String({
      description: 'manual (by the firm), gone (the endpoint answered 410), failing (failed for too long)',
    }),
  ),
  disabled_at: Nullable(Timestamp),
  failing_since: Nullable(Timestamp),
  previous_secret_valid_until: Nullable(
    Type.String({
      format: 'date-time',
      description: 'After a rotation: until when the previous secret signs too',
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const EndpointWithSecret = Type.Intersect([
  EndpointRecord,
  Type.Object({
    secret: Type.String({ description: 'The signing secret (whsec_…): shown this once' }),
  }),
]);

export const ListEndpointsResponse = Type.Object({ endpoints: Type.Array(EndpointRecord) });

export const DeleteEndpointResponse = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });

export const ListDeliveriesQuery = Type.Object({
  limit: Limit(100, 20),
  cursor: Cursor(),
});

export const AttemptView = Type.Object({
  at: Timestamp,
  status_code: Nullable(Type.Integer()),
  duration_ms: Type.Integer(),
  response_body: Nullable(Type.String({ description: "The answer's first 2 KB" })),
  error: Nullable(Type.String()),
  next_retry_at: Nullable(Timestamp),
});

export const DeliveryRecord = Type.Object({
  id: Type.String(),
  endpoint_id: Type.String(),
  kind: Type.Union([
    Type.Literal('event'),
    Type.Literal('replay'),
    Type.Literal('ping'),
    Type.Literal('workflow'),
  ]),
  event_id: Type.String({ description: 'The webhook-id header of every attempt' }),
  type: Type.String(),
  subject: Type.String(),
  occurred_at: Timestamp,
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('delivered'),
    Type.Literal('failed'),
    Type.Literal('skipped'),
  ]),
  reason: Nullable(Type.String()),
  out_of_order: Type.Boolean(),
  attempts: Type.Array(AttemptView),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  settled_at: Nullable(Timestamp),
});

export const ListDeliveriesResponse = Type.Object({
  deliveries: Type.Array(DeliveryRecord),
  next_cursor: Type.String(),
});

export const NoBody = Body({});

export const ReplayBody = Body({
  from: Type.String({ format: 'date-time', description: 'Events that occurred at or after (ISO 8601)' }),
  to: Type.String({ format: 'date-time', description: 'Events that occurred before (ISO 8601)' }),
});

export const ReplayResponse = Type.Object({
  replay_id: Type.String(),
  endpoint_id: Type.String(),
  from: Timestamp,
  to: Timestamp,
  max_events: Type.Integer(),
});
