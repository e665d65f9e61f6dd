import { Type } from '@sinclair/typebox';
import { CAMPAIGN_STATUSES, PAUSE_CODES } from '../../../core/domain/campaigns/campaign-store.js';
import { MAX_LEADS_PER_REQUEST } from '../../../core/domain/campaigns/campaign-leads.js';
import { RETRYABLE_OUTCOMES } from '../../../core/domain/campaigns/campaign-retry.js';
import { Body, Cursor, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';
import { LeadInputFields } from '../leads/schema.js';
import { CAMPAIGN_PURPOSES } from '../../../core/domain/compliance/consent.js';
import { SKIP_REASONS } from '../../../core/domain/campaigns/campaign-progress.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const InlineLead = Type.Object(
  {
    ...LeadInputFields,
    firmSlug: Type.Optional({
      ...FirmSlug,
      description: "The campaign's firm, if given (as POST /api/leads takes it)",
    }),
  },
  {
    additionalProperties: false,
    description:
      'A new lead (source "campaign"). A phone that is not a valid number is kept as none: the lead joins but is not called',
  },
);

const LeadsFields = {
  leads: Type.Optional(
    Type.Array(InlineLead, {
      maxItems: MAX_LEADS_PER_REQUEST,
      description: `At most ${MAX_LEADS_PER_REQUEST} per request; add more with POST /api/leads/campaigns/{id}/leads`,
    }),
  ),
  leadIds: Type.Optional(
    Type.Array(Id, {
      maxItems: MAX_LEADS_PER_REQUEST,
      description: "Ids of the firm's leads (400 with details for any other); a lead joins a campaign once",
    }),
  ),
};

const RetryOn = Type.Array(Type.Union(RETRYABLE_OUTCOMES.map((o) => Type.Literal(o))), {
  maxItems: RETRYABLE_OUTCOMES.length,
  uniqueItems: true,
  description:
    'Call outcomes after which a lead is called again (at most 3 calls, CAMPAIGN_RETRY_DELAY_MS apart); ' +
    'default ["not_connected", "voicemail", "ivr"]',
});

const SkipKnownClients = Type.Boolean({
  description:
    "Set at creation (default false): leads that are the firm's known clients (contacts synced from Clio) " +
    'when they join the campaign are not called and not counted in calls_queued',
});

const Purpose = Type.Union(
  CAMPAIGN_PURPOSES.map((p) => Type.Literal(p)),
  {
    description:
      'Set at creation; without it the platform\'s CAMPAIGN_DEFAULT_PURPOSE ("marketing" unless the deployment ' +
      'widens it), and the record shows the purpose the campaign got. ' +
      'A marketing campaign calls only leads with written consent (its calls are telemarketing in an AI voice: ' +
      '47 CFR 64.1200(a)(2)-(3)); an informational one calls every lead with consent of any kind (an AI ' +
      "voice's call to a possibly mobile number needs prior express consent: 47 U.S.C. 227(b)(1)(A)(iii)) " +
      '(docs/compliance.md#consent)',
  },
);

export const CreateCampaignBody = Body({
  firmSlug: FirmSlug,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  agentId: Id,
  retry_on: Type.Optional(RetryOn),
  skip_known_clients: Type.Optional(SkipKnownClients),
  purpose: Type.Optional(Purpose),
  ...LeadsFields,
});

export const AddCampaignLeadsBody = Body(LeadsFields);

/** launch, pause, resume, cancel: no body (an empty body or {} is accepted). */
export const NoBody = Body({});

export const CampaignParams = Type.Object({ id: Id });

export const ListCampaignsQuery = Type.Object({
  firmSlug: ListFirmSlug,
  limit: Limit(1000, 50),
  cursor: Cursor(),
});

export const CreateCampaignResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Literal('draft'),
  leads_total: Type.Integer(),
});

export const AddCampaignLeadsResponse = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Literal('draft'),
  leads_total: Type.Integer(),
  leads_added: Type.Integer({
    description: 'Leads that joined now (a lead already in the campaign joins once)',
  }),
});

export const LaunchResponse = Type.Object({
  launched: Type.Literal(true),
  calls_queued: Type.Integer({
    description:
      'Distinct callable phones: possible numbers (as create-outbound-call takes them), in allowed_call_countries, not premium-rate unless allowed, not do-not-call, ' +
      'not a known client when the campaign skips them (skip_known_clients)',
  }),
});

const PausedReason = Type.Object(
  {
    code: Type.Union(
      PAUSE_CODES.map((c) => Type.Literal(c)),
      {
        description:
          'manual: paused by POST .../pause; opt_out_rate or dial_failure_rate: paused by the kill switch',
      },
    ),
    message: Type.String({ description: 'What happened, in a sentence' }),
    observed: Nullable(
      Type.Union([
        Type.Object(
          {
            opt_outs: Type.Integer({ description: 'Calls of the window whose person opted out' }),
            calls: Type.Integer({ description: 'Ended calls in the window (at most window_calls)' }),
          },
          { additionalProperties: false },
        ),
        Type.Object(
          {
            dial_failures: Type.Integer({ description: 'Dial attempts of the window that failed' }),
            dials: Type.Integer({ description: 'Dial attempts in the window (at most window_dials)' }),
          },
          { additionalProperties: false },
        ),
      ]),
    ),
    threshold: Nullable(
      Type.Object(
        {
          share: Type.Number({ description: 'opt_out_share or failure_share' }),
          window: Type.Integer({ description: 'window_calls or window_dials' }),
        },
        {
          additionalProperties: false,
          description: 'Paused because the count exceeded share × window, rounded down',
        },
      ),
    ),
    at: Timestamp,
  },
  { additionalProperties: false },
);

export const CampaignRecord = Type.Object({
  id: Type.String(),
  name: Type.String(),
  firm: Type.String(),
  agent_id: Type.String(),
  status: Type.Union(CAMPAIGN_STATUSES.map((s) => Type.Literal(s))),
  leads_total: Type.Integer(),
  calls_queued: Type.Integer({ description: 'Set at launch: one call per distinct callable phone' }),
  calls_placed: Type.Integer({ description: 'Leads called at least once' }),
  calls_completed: Type.Integer({ description: 'Leads with whom a conversation took place' }),
  calls_failed: Type.Integer({
    description:
      'Leads never reached: not_connected, voicemail or ivr after the last attempt (3 with retry_on), an error, or a refused call',
  }),
  retry_on: RetryOn,
  skip_known_clients: SkipKnownClients,
  purpose: Purpose,
  skipped_by_reason: Type.Optional(
    Type.Object(Object.fromEntries(SKIP_REASONS.map((r) => [r, Type.Integer()])), {
      description:
        'GET of one campaign only: its phones not called, by reason — no_consent, consent_not_for_marketing ' +
        '(the consent rule; consent_expired, no longer given, counts what was judged before 2026-12-02), ' +
        'dnc, country, hours (the dial gate); each phone once. ' +
        'They are counted in calls_failed too, and get no call: the calls created are calls_queued minus their sum',
    }),
  ),
  calls_waiting: Type.Optional(
    Type.Integer({
      description:
        "One campaign's record only (not the list): leads the dial gate holds until a later time — the callee’s hours, the firm’s " +
        'calling_window, the number’s attempts in 24 h (docs/campaigns.md#waiting-leads); 0 once the campaign has ended',
    }),
  ),
  next_allowed_at: Type.Optional(
    Type.Union([Timestamp, Type.Null()], {
      description:
        "One campaign's record only (not the list): the earliest time one of those leads may be called; null when none",
    }),
  ),
  known_clients_skipped: Type.Integer({
    description:
      'Leads with a callable phone not called because they were known clients when they joined (skip_known_clients)',
  }),
  paused_reason: Type.Union([PausedReason, Type.Null()], {
    description:
      'Why the campaign is paused (docs/campaigns.md#kill-switch); null unless paused (a cancelled campaign keeps the reason it was paused for)',
  }),
  launched_at: Nullable(Timestamp),
  created_at: Timestamp,
});

export const ListCampaignsResponse = Type.Object({
  campaigns: Type.Array(CampaignRecord),
  next_cursor: Type.String({ description: '"" on the last page' }),
});
