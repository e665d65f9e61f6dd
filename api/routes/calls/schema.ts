import { Type } from '@sinclair/typebox';
import { E164_PATTERN } from '../../../core/domain/firms/firm-settings.js';
import { CALL_STATUSES } from '../../../core/domain/calls/calls.js';
import { CALL_OUTCOMES } from '../../../core/domain/calls/call-outcome.js';
import { URGENCIES } from '../../../core/domain/leads/leads.js';
import { CALL_EFFECTS } from '../../../jobs/call-analysis.js';
import { Body, Cursor, DynamicVariables, FirmSlug, Id, Limit, Timestamp } from '../../schemas/common.js';

export const CreateOutboundCallBody = Body({
  toNumber: Type.String({ pattern: E164_PATTERN, description: 'Number to call, E.164' }),
  agentId: Id,
  firmSlug: FirmSlug,
  dynamicVariables: Type.Optional(DynamicVariables),
  when_allowed: Type.Optional(
    Type.Boolean({
      description:
        "Outside the callee's calling hours or over the number's daily cap: schedule the call for when it is allowed (200, status `scheduled`) instead of answering 409 dial_deferred",
    }),
  ),
});

export const CreateOutboundCallResponse = Type.Object({
  call_id: Type.String(),
  status: Type.Union([Type.Literal('registered'), Type.Literal('scheduled')], {
    description:
      '`scheduled`: deferred by the dial gate (when_allowed); placed when allowed (see scheduled_for on get-call)',
  }),
});

export const CallParams = Type.Object({ call_id: Id });

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const CallStatusSchema = Type.Union(CALL_STATUSES.map((s) => Type.Literal(s)));

/** An effect's state as clients see it (a call's, an ended chat's). */
export const EffectState = Type.Union([
  Type.Literal('pending'),
  Type.Literal('done'),
  Type.Literal('skipped'),
  Type.Literal('failed'),
]);

/** The four intake effects' states, as get-call and get-chat show them. */
export const IntakeEffects = (description: string) =>
  Type.Object(
    Object.fromEntries(CALL_EFFECTS.map((name) => [name, EffectState])) as Record<
      (typeof CALL_EFFECTS)[number],
      typeof EffectState
    >,
    { description },
  );

export const CallRecord = Type.Object({
  call_id: Type.String(),
  agent_id: Nullable(Type.String()),
  firm: Type.String(),
  direction: Type.Union([Type.Literal('outbound'), Type.Literal('inbound')]),
  from_number: Nullable(Type.String()),
  to_number: Nullable(Type.String()),
  status: CallStatusSchema,
  dynamic_variables: Type.Record(Type.String(), Type.String()),
  start_timestamp: Nullable(Type.Integer({ description: 'ms since epoch' })),
  end_timestamp: Nullable(Type.Integer({ description: 'ms since epoch' })),
  duration_ms: Nullable(Type.Integer()),
  disconnection_reason: Nullable(Type.String()),
  transcript: Nullable(Type.String()),
  call_analysis: Nullable(
    Type.Object({
      call_summary: Nullable(Type.String()),
      user_sentiment: Nullable(Type.String()),
      call_successful: Nullable(Type.Boolean()),
      in_voicemail: Type.Optional(
        Nullable(Type.Boolean({ description: "The provider's voicemail detection" })),
      ),
      custom_analysis_data: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
  campaign_id: Type.Optional(Type.String()),
  scheduled_for: Type.Optional(
    Type.Integer({
      description: 'ms since epoch: when a call created with when_allowed is due to be dialled',
    }),
  ),
  dial_block_reason: Type.Optional(
    Type.String({
      description:
        'The call ended before it was dialled (status error, disconnection_reason dial_blocked): the dial gate rule that blocked it, e.g. dnc, country; or campaign_cancelled, its campaign cancelled first',
    }),
  ),
  caller_data: Nullable(
    Type.Object(
      {
        first_name: Nullable(Type.String()),
        last_name: Nullable(Type.String()),
        phone: Nullable(Type.String({ description: 'E.164' })),
        email: Nullable(Type.String()),
        case_type: Nullable(Type.String()),
        summary: Type.String(),
        urgency: Type.Union(URGENCIES.map((u) => Type.Literal(u))),
      },
      {
        description:
          'What the call_analyzed pipeline extracted about the caller (once; every effect uses it); null until then',
      },
    ),
  ),
  effects: IntakeEffects(
    'The call_analyzed effects. pending: not happened yet (also while an attempt runs or is retried with ' +
      'backoff); done; skipped: not configured for the firm, nothing to act on, or the call did not connect; ' +
      'failed: gave up after the last attempt, or refused for good by the outside system',
  ),
  lead_id: Nullable(
    Type.String({ description: 'The lead created from this call, once the lead effect is done' }),
  ),
  outcome: Nullable(
    Type.Union(
      CALL_OUTCOMES.map((o) => Type.Literal(o)),
      {
        description:
          'Answered or not, once the call is finished (null before): only a conversation runs the intake ' +
          'effects; voicemail, ivr (an automated phone menu) and not_connected run none of them',
      },
    ),
  ),
  effect_reasons: Type.Object(
    Object.fromEntries(CALL_EFFECTS.map((name) => [name, Type.Optional(Type.String())])),
    {
      description:
        'Why each skipped effect was skipped, and why a failed one failed where the firm can act on it ' +
        '(crm: reconnect_required, Clio refused to renew the grant: connect Clio again); no other effect appears',
    },
  ),
  created_at: Timestamp,
});

export const ListCallsBody = Body({
  // Required here, whoever asks (docs/authentication.md#which-firm-a-list-is-for).
  firmSlug: FirmSlug,
  limit: Limit(1000, 50),
  cursor: Cursor(),
});

export const ListCallsResponse = Type.Object({
  calls: Type.Array(CallRecord),
  next_cursor: Type.String({ description: '"" on the last page' }),
});
