import type { CallEffectName } from '../../../jobs/call-analysis.js';
import { enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { Attempt, EffectSubject } from '../../platform/db/effect-records.js';
import type { Services } from '../../wiring/services.js';
import { callsCollection, shownCallId, type CallDoc } from '../calls/calls.js';
import { callEffectsSubject } from '../calls/call-lock.js';
import { callOutcome, notAConversation } from '../calls/call-outcome.js';
import { runIntakeEffect, runIntakeEffects, type EffectInJob, type Intake } from './intake-effects.js';

export { SETTLE_LINGER_MS, isFinalEffectFailure, smtpCode } from './intake-effects.js';

// The effects of an analysed call (docs/webhooks.md#the-effects): the intake effects
// (intake-effects.ts) of the call, with their records in the call's effects document
// (CallEffectsDoc: no effect rewrites the call and its transcript), a failing one retried by its
// call-effect job.

/** Why an analysed call runs no effect: it did not connect, or no conversation took place. */
function idleReason(call: CallDoc): string | null {
  const outcome = callOutcome(call);
  if (outcome === null) return `The call did not connect (status ${call.status}).`;
  return outcome === 'conversation' ? null : notAConversation(outcome);
}

/**
 * A call as the subject of the intake effects; `seen`: its effects document as read before they
 * began (EffectSubject.seen).
 */
export function callIntake(services: Services, call: CallDoc, seen?: EffectSubject['seen']): Intake {
  return {
    kind: 'call',
    id: call._id,
    firm: call.firm,
    records: { ...callEffectsSubject(services, call), ...(seen === undefined ? {} : { seen }) },
    idle: idleReason(call),
    data: call.extraction,
    lead: {
      source: 'call',
      id: call._id,
      shownId: shownCallId(call),
      firm: call.firm,
      campaign_id: call.campaign_id ?? null,
      // A caller who rang the firm made an inquiry: consent to be called back about it.
      ...(call.direction === 'inbound'
        ? { inquiryAt: new Date(call.start_timestamp ?? call.created_at.getTime()) }
        : {}),
    },
    notice: { kind: 'call', call },
    retry: (effect, options) =>
      enqueueRun(services.queues, JOBS.callEffect, { firm: call.firm, callId: call._id, effect }, options),
  };
}

type EffectRunOutcome = 'missing' | Awaited<ReturnType<typeof runIntakeEffect>>['state'];

/** Runs one effect of an analysed call (the callEffect job, a retry); its state after this attempt. */
export async function runCallEffect(
  services: Services,
  job: { firm: string; callId: string; effect: CallEffectName },
  attempt: Attempt,
): Promise<EffectRunOutcome> {
  // What the effects read of the call: not its transcript, nor records they do not use.
  const call = (await callsCollection(services.mongo.db).findOne(
    { _id: job.callId },
    { projection: { transcript: 0, dial: 0, dynamic_variables: 0, effects: 0, crm_sync: 0 } },
  )) as CallDoc | null;
  if (call === null || call.firm !== job.firm) return 'missing';
  return (await runIntakeEffect(services, callIntake(services, call), job.effect, attempt)).state;
}

/**
 * Every effect of an analysed call, together, in the analysis job that has the call in hand
 * (runIntakeEffects), their first looks from `seen` when the job read the effects document; a
 * failing one is handed to its call-effect job (job id = firm + call + effect).
 */
export function runCallEffects(
  services: Services,
  call: CallDoc,
  attempt: Attempt,
  seen?: EffectSubject['seen'],
): Promise<Record<CallEffectName, EffectInJob>> {
  return runIntakeEffects(services, callIntake(services, call, seen), attempt);
}
