import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';
import { BusyUntilError } from '../../platform/busy-until.js';
import { retryAfterOf } from '../../platform/retry-after.js';
import { inSpan } from '../../platform/telemetry/start.js';
import { CrmError } from '../../integrations/crm/clio.js';
import { TeamChatError, postToSlack } from '../../integrations/team-chat/slack.js';
import { urlPolicyOf } from '../../platform/config.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import { flushCarried } from '../../platform/db/effect-record-writes.js';
import {
  newSettleCarry,
  type Attempt,
  type Effect,
  type EffectOutcome,
  type EffectRecord,
  type EffectSubject,
} from '../../platform/db/effect-records.js';
import type { Services } from '../../wiring/services.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';
import { ensureSubjectLead } from '../leads/leads.js';
import { recordLeadCreated } from '../leads/record-lead-events.js';
import { hasContact, leadFieldsFrom, type CallerData } from '../intake/caller-data.js';
import { firmClioClient } from '../crm/firm-clio-client.js';
import { findKnownClient, type KnownClientReads } from '../contacts/known-clients.js';
import { syncToClio } from './crm-sync.js';
import { intakeNotificationEmail, intakeNotificationSlack, type NotifiedIntake } from './notifications.js';

// The effects of an intake (docs/webhooks.md#the-effects): of an analysed call, and of an ended
// chat (docs/webhooks.md#chats), the same four, defined once here. They run together in one job
// (a failing one then by its own job), each through the effect recorder
// (core/platform/db/effect-recorder.ts) with its record at `effects.<name>` in the subject's
// effects document (a call's CallEffectsDoc, a chat's ChatEffectsDoc: no effect rewrites the call
// and its transcript, nor the chat and its messages):
// a done or skipped effect is never repeated, whichever job or delivery comes next; a failing one
// is retried by its own job with backoff; the job's last attempt, or a refusal that retrying
// cannot fix, leaves it `failed`. Unconfigured effects are `skipped` with the reason.
//
// What differs between a call and a chat is the Intake each gives (call-effects.ts,
// core/domain/chats/chat-effects.ts): where the records live, why nothing is acted on, its lead,
// what the notifications say of it, and the job that retries a failing effect.

type Result = Record<string, unknown>;

const skipped = (reason: string): EffectOutcome<Result> => ({ state: 'skipped', result: { reason } });

/** SMTP's answer to the message: 5xx is permanent (every recipient refused), 4xx is "try later". */
export const smtpCode = (err: unknown): number | null => {
  const code = (err as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' ? code : null;
};

/** A failure no retry can fix: the job should stop (the record is already `failed`). */
export function isFinalEffectFailure(err: unknown): boolean {
  if (err instanceof CrmError || err instanceof TeamChatError) return err.final;
  const code = smtpCode(err);
  return code !== null && code >= 500;
}

/** What the effects act on: an analysed call or an ended chat, as its adapter describes it. */
export interface Intake {
  /** A call or a chat: names the effects' spans and logs. */
  kind: 'call' | 'chat';
  /** Its stored `_id`: its effects document's, Clio's client_reference, the mail's Message-ID. */
  id: string;
  firm: string;
  /** Where its effects' records live and how they are written (its lock, the leases). */
  records: EffectSubject;
  /** Why no effect acts on it (no conversation took place), recorded as each one's skip reason; null: they run. */
  idle: string | null;
  /** The caller data every effect uses; undefined while it is not extracted (an effect then fails, to be retried). */
  data: CallerData | undefined;
  /** Its lead, as ensureSubjectLead takes it. */
  lead: Parameters<typeof ensureSubjectLead>[1];
  /** What the notifications and the CRM's matter say of it. */
  notice: NotifiedIntake;
  /** Hands an effect that failed to its own job (job id = firm + subject + effect), retried with backoff. */
  retry(effect: CallEffectName, options: { delay: number; retryDelayMs: number }): Promise<void>;
}

interface EffectContext {
  services: Services;
  intake: Intake;
  data: CallerData;
  firm: FirmDoc;
  attempt: Attempt;
  /** The subject's effects document as the recorder writes it (the CRM's steps are recorded there too). */
  subject: EffectSubject;
  /** Aborted when the effect's bound is reached (Effect.boundMs). */
  signal: AbortSignal;
  /** The job's known-client lookups: the lead and the CRM ask about the same phone and email. */
  knownClients: KnownClientReads;
}

const EFFECTS: Record<
  CallEffectName,
  {
    effect: Omit<Effect<Result>, 'path' | 'boundMs'>;
    /** The longest its request may be out (Effect.boundMs): for what cannot be asked about afterwards. */
    boundMs?: (config: Services['config']) => number;
    perform: (ctx: EffectContext) => Promise<EffectOutcome<Result>>;
  }
> = {
  lead: {
    // The lead is a claim on an id derived from the call or chat, and lead.created is recorded once
    // under its own key: repeating it is harmless, so no answer is stored before its record.
    effect: { repeatable: true },
    async perform({ services, intake, data, knownClients }) {
      if (!hasContact(data)) return skipped('No phone number or email address was collected.');
      const lead = await ensureSubjectLead(services.mongo.db, intake.lead, leadFieldsFrom(data), {
        knownClients,
      });
      // Made now or by an earlier attempt: its key records lead.created once.
      await recordLeadCreated(services, lead);
      // A call's lead_id is this result (withCallEffects): the call document is not rewritten for it.
      return { state: 'done', result: { lead_id: lead._id } };
    },
  },
  crm: {
    // Its Clio writes are steps recorded on their own (crm-sync.ts): a repeat finds them done and
    // writes nothing twice, so no answer is stored before its record.
    effect: { isFinal: (err) => err instanceof CrmError && err.final, repeatable: true },
    async perform({ services, intake, data, firm, attempt, subject, knownClients }) {
      const crm = firm.settings.crm;
      if (crm.provider !== 'clio') return skipped('The firm has no CRM configured (settings.crm).');
      if (!hasContact(data)) return skipped('No phone number or email address was collected.');
      const client = await firmClioClient(services, firm);
      if (client === null) return skipped('The firm has no CRM configured (settings.crm).');
      const syncedId = async () => {
        const known = await findKnownClient(
          services.mongo.db,
          intake.firm,
          { phone: data.phone, email: data.email },
          knownClients,
        );
        const id = Number(known?.external_id ?? NaN);
        return Number.isSafeInteger(id) && id > 0 ? id : null;
      };
      const synced = await syncToClio(client, subject, intake.notice, data, attempt, syncedId);
      return { state: 'done', result: { provider: 'clio', ...synced } };
    },
  },
  email: {
    effect: {
      // The server refused the message (an SMTP reply code): it was not sent.
      mayHaveHappened: (err) => smtpCode(err) === null,
      isFinal: (err) => (smtpCode(err) ?? 0) >= 500,
    },
    boundMs: (config) => config.smtpSendTimeoutMs,
    async perform({ services, intake, data, firm, signal }) {
      if (services.mailer === null) return skipped('Email is not configured for the service (SMTP_URL).');
      const to = firm.settings.notification_emails;
      if (to.length === 0) return skipped('The firm has no notification_emails.');
      const message = intakeNotificationEmail(
        {
          intake: intake.notice,
          data,
          firmName: firm.name,
          timeZone: firm.settings.timezone,
          publicBaseUrl: services.config.publicBaseUrl,
        },
        to,
      );
      const sent = await services.mailer.send({ ...message, signal });
      return { state: 'done', result: { message_id: sent.messageId, accepted: sent.accepted } };
    },
  },
  team_chat: {
    effect: {
      mayHaveHappened: (err) => !(err instanceof TeamChatError) || err.mayHaveBeenSent,
      isFinal: (err) => err instanceof TeamChatError && err.final,
    },
    boundMs: (config) => config.slackTimeoutMs,
    async perform({ services, intake, data, firm, signal }) {
      const url = firm.settings.slack_webhook_url;
      if (url === undefined) return skipped('The firm has no slack_webhook_url.');
      await postToSlack(
        url,
        intakeNotificationSlack({
          intake: intake.notice,
          data,
          firmName: firm.name,
          timeZone: firm.settings.timezone,
          publicBaseUrl: services.config.publicBaseUrl,
        }),
        { policy: urlPolicyOf(services.config), timeoutMs: services.config.slackTimeoutMs, signal },
      );
      return { state: 'done', result: { channel: 'slack' } };
    },
  },
};

/**
 * The longest an effect done waits for another write to go with (get-call shows it pending until
 * then): a slow Slack post or mail does not hold back the lead's `done` and `lead_id`.
 */
export const SETTLE_LINGER_MS = 250;

/** What the job did of an effect: its state, or that its own job now retries it. */
export type EffectInJob = EffectRecord['state'] | 'retried_by_its_job';

/**
 * Every effect of an intake, together, in the job that has it in hand (no job, and no read of the
 * subject, per effect): what a call costs is mostly round trips, and four jobs were a third of
 * them. An effect that fails is handed to its own job (Intake.retry: job id = firm + subject +
 * effect), which retries it alone with backoff, its first try CALL_EFFECT_RETRY_MS later (or the
 * Retry-After of a 429 it failed with, when longer); one under way in another attempt is handed
 * over to look again when that attempt's lease ends; one refused for good is recorded `failed`
 * and left. Effects done are never repeated.
 */
export async function runIntakeEffects(
  services: Services,
  intake: Intake,
  attempt: Attempt,
): Promise<Record<CallEffectName, EffectInJob>> {
  // An attempt of the job is not the effect's last: its own job has attempts of its own.
  const first: Attempt = {
    lastAttempt: false,
    ...(attempt.gate === undefined ? {} : { gate: attempt.gate }),
  };
  // The lead and the CRM look up the same known client: once for both.
  const knownClients: KnownClientReads = new Map();
  // The settles of the lead, the CRM and its steps go with the effects' next write (the recorder's
  // "settles carried"), on their own after SETTLE_LINGER_MS without one, and what is left in one
  // write at the end: a lost one is repeated or asked about by the next attempt.
  // Their marks from the version the job read (a call's: call.analyzed's read, one `seen` for all)
  // go in one write (the recorder's "marks gathered").
  const subject: EffectSubject = { ...intake.records, carry: newSettleCarry(SETTLE_LINGER_MS) };
  const carried: Intake = { ...intake, records: subject };
  // A trace names the call (a chat: its firm only).
  const spanSubject = intake.kind === 'call' ? { callId: intake.id } : {};
  const running = Promise.all(
    CALL_EFFECTS.map((effect) =>
      inSpan(`${intake.kind} effect ${effect}`, { firm: intake.firm, ...spanSubject }, () =>
        runIntakeEffect(services, carried, effect, first, knownClients),
      ).then(
        (record) => record.state,
        async (err: unknown): Promise<EffectInJob> => {
          if (isFinalEffectFailure(err)) return 'failed';
          const retryMs = services.config.callEffectRetryMs;
          // Under way in another attempt: look again when its lease ends (as workers/park.ts does).
          // Refused with a 429 whose Retry-After was too long to wait here: not before it.
          const delay =
            err instanceof BusyUntilError
              ? err.until + 250 - Date.now()
              : Math.max(retryMs, retryAfterOf(err) ?? 0);
          services.log.info(
            { firm: intake.firm, [`${intake.kind}_id`]: intake.id, effect, err: (err as Error).message },
            `${intake.kind} effect handed to its own job`,
          );
          await intake.retry(effect, { delay, retryDelayMs: retryMs });
          return 'retried_by_its_job';
        },
      ),
    ),
  );
  const states = await running.catch(async (err: unknown) => {
    // What is known is still written; the retry repeats or asks about the rest.
    await flushCarried(subject).catch(() => undefined);
    throw err;
  });
  await flushCarried(subject);
  return Object.fromEntries(CALL_EFFECTS.map((effect, i) => [effect, states[i]!])) as Record<
    CallEffectName,
    EffectInJob
  >;
}

/**
 * Runs one effect of an intake (an effect's own job, a retry; end-chat's lead), through the
 * recorder: its record after this attempt.
 */
export async function runIntakeEffect(
  services: Services,
  intake: Intake,
  name: CallEffectName,
  attempt: Attempt,
  knownClients: KnownClientReads = new Map(),
): Promise<EffectRecord<Result>> {
  const { effect, perform, boundMs: boundOf } = EFFECTS[name];
  const boundMs = boundOf?.(services.config);
  const subject = intake.records;
  return runEffect<Result>(
    subject,
    { ...effect, path: `effects.${name}`, ...(boundMs === undefined ? {} : { boundMs }) },
    attempt,
    async (signal) => {
      if (intake.idle !== null) return skipped(intake.idle);
      const firm = await getFirm(services.mongo.db, intake.firm);
      if (firm === null) return skipped('The firm no longer exists.');
      // A call's analysis job stores the extraction before any effect runs; end-chat, the chat's.
      if (intake.data === undefined)
        throw new Error(`The ${intake.kind} ${intake.id} has no extraction yet.`);
      return perform({ services, intake, data: intake.data, firm, attempt, subject, signal, knownClients });
    },
  );
}
