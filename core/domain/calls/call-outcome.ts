// Answered or not: what a finished call was, decided from Retell's
// disconnection_reason, call_analysis.in_voicemail and call_status together. Retell reports a
// dial failure by its reason and may send call_status "ended" beside it, so the status alone
// cannot tell. Only a conversation runs the intake effects; a campaign retries the others.

export const CALL_OUTCOMES = ['conversation', 'voicemail', 'not_connected'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** A campaign retries these unless it says otherwise (`retry_on`). */
export const DEFAULT_RETRY_ON: CallOutcome[] = ['not_connected', 'voicemail'];

// retell-sdk's disconnection_reason values that mean the callee was never on the line
// (node_modules/retell-sdk/src/resources/call.ts), plus every error_*.
const DIAL_FAILURES = new Set([
  'dial_no_answer',
  'dial_busy',
  'dial_failed',
  'invalid_destination',
  'telephony_provider_permission_denied',
  'telephony_provider_unavailable',
  'sip_routing_error',
  'marked_as_spam',
  'user_declined',
  'no_valid_payment',
  'registered_call_timeout',
]);

export function isDialFailure(reason: string | null | undefined): boolean {
  return typeof reason === 'string' && (DIAL_FAILURES.has(reason) || reason.startsWith('error_'));
}

/** What a call's outcome is decided from: its status and the provider's words on it. */
export interface OutcomeFacts {
  status: string;
  finished: boolean;
  disconnection_reason: string | null;
  call_analysis: { in_voicemail?: boolean | null } | null;
}

/** The outcome of a finished call; null while it is not finished. */
export function callOutcome(call: OutcomeFacts): CallOutcome | null {
  if (!call.finished) return null;
  if (
    call.status === 'not_connected' ||
    call.status === 'error' ||
    isDialFailure(call.disconnection_reason)
  ) {
    return 'not_connected';
  }
  if (call.call_analysis?.in_voicemail === true || call.disconnection_reason === 'voicemail_reached') {
    return 'voicemail';
  }
  return 'conversation';
}

/** Why a call that was not a conversation runs no intake effect (the effects' `reason`). */
export function notAConversation(outcome: Exclude<CallOutcome, 'conversation'>): string {
  return outcome === 'voicemail'
    ? 'The call reached voicemail: no conversation took place.'
    : 'The call did not connect: no conversation took place.';
}
