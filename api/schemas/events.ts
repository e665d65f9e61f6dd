import { Type, type TSchema } from '@sinclair/typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { EVENT_TYPES, type EventType } from '../../core/domain/events/event-types.js';
import { CallRecord } from '../routes/calls/schema.js';
import { CampaignRecord } from '../routes/campaigns/schema.js';
import { DncEntryRecord } from '../routes/compliance/schema.js';
import { ImportJobResponse } from '../routes/contacts/schema.js';
import { SyncJobResponse } from '../routes/contacts/sync-schema.js';
import { LeadRecord } from '../routes/leads/schema.js';
import { Timestamp } from './common.js';

// The body of each event type as a receiver gets it (docs/events.md#event-types): `{type,
// timestamp, data}`, `data` being the record as the API's own routes answer it — the same schemas,
// so an event's data and a GET of its record never drift apart. Every object is closed here: a
// field the schema does not name is an error (the docs' examples and the tests' events are
// checked against these).

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const LeadUpdated = Type.Object({
  ...LeadRecord.properties,
  changed_fields: Type.Array(Type.String(), {
    minItems: 1,
    description: 'The lead fields this update changed (first_name, phone, …)',
  }),
});

const Appointment = (status: string) =>
  Type.Object({
    lead_id: Type.String({ description: 'The lead whose appointment this is (the event subject)' }),
    booking_uid: Type.String({ description: "The booking's uid at the booking provider (Cal.com)" }),
    start: Timestamp,
    status: Type.Literal(status),
    lead: Nullable(LeadRecord),
  });

const CompletedImport = ImportJobResponse.anyOf[0];
const CompletedSync = Type.Object({ ...SyncJobResponse.properties, status: Type.Literal('completed') });

/** The schema of each type's `data`. */
export const EVENT_DATA_SCHEMAS: Record<EventType, TSchema> = {
  'call.started': CallRecord,
  'call.ended': CallRecord,
  'call.analyzed': CallRecord,
  'lead.created': LeadRecord,
  'lead.updated': LeadUpdated,
  'appointment.booked': Appointment('booked'),
  'appointment.requested': Appointment('requested'),
  'appointment.rescheduled': Appointment('rescheduled'),
  'appointment.cancelled': Appointment('cancelled'),
  'appointment.rejected': Appointment('rejected'),
  'campaign.launched': CampaignRecord,
  'campaign.paused': CampaignRecord,
  'campaign.completed': CampaignRecord,
  'contacts.import.completed': CompletedImport,
  'contacts.sync.completed': CompletedSync,
  'dnc.added': DncEntryRecord,
};

/** The body of an event of `type`: `{type, timestamp, data}`. */
export const eventBodySchema = (type: EventType) =>
  Type.Object({
    type: Type.Literal(type),
    timestamp: Type.String({ format: 'date-time', description: 'When the change happened' }),
    data: EVENT_DATA_SCHEMAS[type],
  });

/** The schema with every object closed: a property it does not name is an error. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === 'properties'
        ? Object.fromEntries(Object.entries(v as object).map(([name, s]) => [name, closed(s)]))
        : closed(v);
  }
  if (out.properties !== undefined && out.additionalProperties === undefined)
    out.additionalProperties = false;
  return out;
}

let validators: Map<EventType, ValidateFunction> | null = null;

function compiled(): Map<EventType, ValidateFunction> {
  if (validators !== null) return validators;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv, ['date-time']);
  validators = new Map(EVENT_TYPES.map((t) => [t, ajv.compile(closed(eventBodySchema(t)) as object)]));
  return validators;
}

/**
 * The problems of an event body (`{type, timestamp, data}`) against its type's schema, each as
 * "<JSON pointer> <message>"; [] when it conforms. An unknown type is one problem.
 */
export function eventBodyProblems(body: { type?: unknown }): string[] {
  const validate = compiled().get(body.type as EventType);
  if (validate === undefined) return [`/type is not an event type: ${JSON.stringify(body.type)}`];
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${
        e.keyword === 'additionalProperties'
          ? `: ${String((e.params as { additionalProperty?: unknown }).additionalProperty)}`
          : ''
      }`,
  );
}
