import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';
import { callOutcome, notAConversation, type CallOutcome } from './call-outcome.js';
import type { CallDoc } from './calls.js';

// What get-call adds about answered-or-not: the call's outcome, and why each
// skipped effect was skipped.

/** A finished call in which no conversation took place: no intake effect runs for it. */
export function isIntakeless(call: CallDoc): boolean {
  const outcome = callOutcome(call);
  return outcome !== null && outcome !== 'conversation';
}

function skipReason(call: CallDoc, name: CallEffectName): string | null {
  const record = call.effects?.[name];
  if (record === undefined) {
    const outcome = callOutcome(call);
    return outcome === null || outcome === 'conversation' ? null : notAConversation(outcome);
  }
  const reason = record.state === 'skipped' ? record.result?.reason : undefined;
  return typeof reason === 'string' ? reason : null;
}

export function outcomeView(call: CallDoc): {
  outcome: CallOutcome | null;
  effect_reasons: Partial<Record<CallEffectName, string>>;
} {
  const reasons: Partial<Record<CallEffectName, string>> = {};
  for (const name of CALL_EFFECTS) {
    const reason = skipReason(call, name);
    if (reason !== null) reasons[name] = reason;
  }
  return { outcome: callOutcome(call), effect_reasons: reasons };
}
