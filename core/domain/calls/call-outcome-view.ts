import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';
import { callOutcome, notAConversation, type CallOutcome } from './call-outcome.js';
import type { CallDoc } from './calls.js';

// What get-call adds about answered-or-not: the call's outcome, why each skipped effect was
// skipped, and why a failed one failed where the firm can act on it.

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
  if (record.state === 'failed') return failedReason(record.last_error);
  const reason = record.state === 'skipped' ? record.result?.reason : undefined;
  return typeof reason === 'string' ? reason : null;
}

/**
 * The failures a firm can act on, by the code their error begins with (`reconnect_required: …`,
 * core/domain/crm/clio-connection.ts: connect Clio again). Any other failure's text stays in the
 * record (a provider's message is not the API's to show).
 */
const ACTIONABLE_FAILURES = ['reconnect_required'] as const;

function failedReason(lastError: string | null | undefined): string | null {
  const code = /^([a-z_]+):/.exec(lastError ?? '')?.[1];
  return code !== undefined && (ACTIONABLE_FAILURES as readonly string[]).includes(code) ? code : null;
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
