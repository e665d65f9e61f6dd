import { Type } from '@sinclair/typebox';
import { LEAD_SOURCES } from '../../../core/domain/leads/leads.js';
import { CONSENT_KINDS } from '../../../core/domain/compliance/consent.js';
import { Body, Cursor, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Text = (maxLength: number, description?: string) =>
  Type.String({ maxLength, ...(description === undefined ? {} : { description }) });

const ConsentFields = {
  kind: Type.Union(
    CONSENT_KINDS.map((k) => Type.Literal(k)),
    {
      description:
        'written: signed or ticked consent to marketing calls; inquiry: the person asked the firm (a call, a chat); existing_client: a client of the firm (informational calls only)',
    },
  ),
  text: Type.String({ minLength: 1, maxLength: 2000, description: 'What the person agreed to, in words' }),
  obtained_at: Type.String({ format: 'date-time', description: 'ISO 8601' }),
  source: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'Where it was obtained: a web form, "inbound_call", "chat", …',
  }),
};

export const ConsentInput = Type.Object(
  {
    ...ConsentFields,
    evidence_url: Type.Optional(Type.String({ format: 'uri', maxLength: 2048 })),
  },
  {
    additionalProperties: false,
    description:
      "The person's consent to be called (docs/compliance.md#consent): a marketing campaign calls only on written consent or a recent inquiry",
  },
);

export const ConsentRecord = Type.Object({
  ...ConsentFields,
  evidence_url: Type.Optional(Type.String()),
});

/** The fields a client may give a lead (POST /api/leads, campaign inline leads). */
export const LeadInputFields = {
  first_name: Type.Optional(Text(200)),
  last_name: Type.Optional(Text(200)),
  phone: Type.Optional(Text(64, 'Any common writing; stored in E.164 (a national number is read as US)')),
  email: Type.Optional(Text(254, 'Stored trimmed and lower-cased')),
  case_type: Type.Optional(Text(200)),
  notes: Type.Optional(Text(5000)),
  timezone: Type.Optional(
    Text(64, "IANA time zone of the person (campaign calling windows); else the firm's"),
  ),
  do_not_call: Type.Optional(Type.Boolean({ description: 'Never called by campaigns' })),
  consent: Type.Optional(ConsentInput),
};

export const CreateLeadBody = Body({ firmSlug: FirmSlug, ...LeadInputFields });

export const LeadParams = Type.Object({ id: Id });

export const ListLeadsQuery = Type.Object({
  firmSlug: ListFirmSlug,
  limit: Limit(1000, 50),
  cursor: Cursor(),
});

export const LeadRecord = Type.Object({
  id: Type.String(),
  firm: Type.String(),
  source: Type.Union(LEAD_SOURCES.map((s) => Type.Literal(s))),
  call_id: Nullable(Type.String()),
  chat_id: Nullable(Type.String()),
  campaign_id: Nullable(Type.String()),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  phone: Nullable(Type.String({ description: 'E.164' })),
  email: Nullable(Type.String()),
  case_type: Nullable(Type.String()),
  summary: Nullable(Type.String()),
  urgency: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  do_not_call: Type.Boolean(),
  consent: Nullable(ConsentRecord),
  appointment: Type.Union(
    [
      Type.Object({
        booking_uid: Type.String({
          description: 'The booking the appointment is now (a reschedule makes a new one)',
        }),
        start: Type.String({ description: 'ISO 8601' }),
        status: Type.Union(
          [
            Type.Literal('booked'),
            Type.Literal('requested'),
            Type.Literal('rescheduled'),
            Type.Literal('cancelled'),
            Type.Literal('rejected'),
          ],
          { description: 'requested: the event type needs the firm to confirm; each booking event moves it' },
        ),
      }),
      Type.Null(),
    ],
    {
      description:
        'The appointment made for this lead, following every booking event (docs/appointments.md), or null when none was ever made',
    },
  ),
  known_client: Nullable(
    Type.Object(
      {
        source: Type.Literal('clio'),
        contact_id: Type.String(),
        external_id: Nullable(Type.String({ description: "The client's id in Clio" })),
      },
      {
        description:
          "The firm's client synced from Clio (POST /api/contacts/sync) whose phone or email this lead has, as found when the lead was created",
      },
    ),
  ),
  workflow_status: Nullable(
    Type.String({ description: "Set by a workflow's update_lead step (docs/workflows.md); null: none" }),
  ),
  tags: Type.Array(Type.String(), { description: "Added by workflows' update_lead steps, each once" }),
  created_at: Timestamp,
});

export const ListLeadsResponse = Type.Object({
  leads: Type.Array(LeadRecord),
  next_cursor: Type.String({ description: '"" on the last page' }),
});
