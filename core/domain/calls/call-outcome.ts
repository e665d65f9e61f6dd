import type { PhoneCallResponse } from 'retell-sdk/resources/call';

// Answered or not: what a finished call was, decided from Retell's
// disconnection_reason, call_analysis.in_voicemail and call_status together. Retell reports a
// dial failure by its reason and may send call_status "ended" beside it, so the status alone
// cannot tell. Only a conversation runs the intake effects; a campaign retries the others.

export const CALL_OUTCOMES = ['conversation', 'voicemail', 'ivr', 'not_connected'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** A campaign retries these unless it says otherwise (`retry_on`). */
export const DEFAULT_RETRY_ON: CallOutcome[] = ['not_connected', 'voicemail', 'ivr'];

/** Every disconnection_reason of the retell-sdk we build against. */
export type DisconnectionReason = NonNullable<PhoneCallResponse['disconnection_reason']>;

/**
 * What a call that ended with each reason was (docs/calls.md#every-disconnection-reason says
 * why, one by one). Typed with retell-sdk's own union: a reason Retell adds fails the typecheck
 * here until someone decides what it means. Reasons from Retell's "Debug call disconnection"
 * doc (docs.retellai.com/reliability/debug-call-disconnect) and
 * node_modules/retell-sdk/resources/call.d.ts.
 */
const BY_REASON: Record<DisconnectionReason, CallOutcome> = {
  // The callee was on the line with the agent until one of them, or a limit, ended it.
  user_hangup: 'conversation',
  agent_hangup: 'conversation',
  call_transfer: 'conversation',
  transfer_bridged: 'conversation',
  transfer_cancelled: 'conversation',
  inactivity: 'conversation',
  max_duration_reached: 'conversation',
  manual_stopped: 'conversation',
  call_take_over: 'conversation',
  // A machine answered.
  voicemail_reached: 'voicemail',
  ivr_reached: 'ivr',
  // Never connected to the agent: dial failures, refusals on Retell's side, errors.
  dial_busy: 'not_connected',
  dial_failed: 'not_connected',
  dial_no_answer: 'not_connected',
  invalid_destination: 'not_connected',
  telephony_provider_permission_denied: 'not_connected',
  telephony_provider_unavailable: 'not_connected',
  sip_routing_error: 'not_connected',
  marked_as_spam: 'not_connected',
  user_declined: 'not_connected',
  concurrency_limit_reached: 'not_connected',
  no_concurrency_fallback: 'not_connected',
  no_valid_payment: 'not_connected',
  scam_detected: 'not_connected',
  registered_call_timeout: 'not_connected',
  error_llm_websocket_open: 'not_connected',
  error_llm_websocket_lost_connection: 'not_connected',
  error_llm_websocket_runtime: 'not_connected',
  error_llm_websocket_corrupt_payload: 'not_connected',
  error_no_audio_received: 'not_connected',
  error_asr: 'not_connected',
  error_retell: 'not_connected',
  error_unknown: 'not_connected',
  error_user_not_joined: 'not_connected',
};

/** The outcome a reason names by itself; null for none or for a reason this SDK does not know. */
function reasonOutcome(reason: string | null | undefined): CallOutcome | null {
  if (typeof reason !== 'string') return null;
  if (Object.hasOwn(BY_REASON, reason)) return BY_REASON[reason as DisconnectionReason];
  // A newer Retell's error_* is an error all the same.
  return reason.startsWith('error_') ? 'not_connected' : null;
}

/** The callee was never on the line with the agent, whatever call_status says beside it. */
export function isDialFailure(reason: string | null | undefined): boolean {
  return reasonOutcome(reason) === 'not_connected';
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
  const byReason = reasonOutcome(call.disconnection_reason);
  if (call.status === 'not_connected' || call.status === 'error' || byReason === 'not_connected') {
    return 'not_connected';
  }
  if (call.call_analysis?.in_voicemail === true || byReason === 'voicemail') return 'voicemail';
  if (byReason === 'ivr') return 'ivr';
  return 'conversation';
}

const NOT_A_CONVERSATION: Record<Exclude<CallOutcome, 'conversation'>, string> = {
  voicemail: 'The call reached voicemail: no conversation took place.',
  ivr: 'The call reached an automated phone menu (IVR): no conversation took place.',
  not_connected: 'The call did not connect: no conversation took place.',
};

/** Why a call that was not a conversation runs no intake effect (the effects' `reason`). */
export function notAConversation(outcome: Exclude<CallOutcome, 'conversation'>): string {
  return NOT_A_CONVERSATION[outcome];
}
