// Answered or not, rule by rule, over every disconnection_reason retell-sdk knows: the table is
// typed with retell-sdk's own union, so a reason Retell adds (or drops) fails the typecheck here
// until someone decides what it means.
import { describe, expect, it } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { callOutcome, isDialFailure, type CallOutcome } from '../../core/domain/calls/call-outcome.js';

type Reason = NonNullable<PhoneCallResponse['disconnection_reason']>;

/** What a call that ended ("ended", no voicemail flag) with each reason was. */
const BY_REASON: Record<Reason, CallOutcome> = {
  user_hangup: 'conversation',
  agent_hangup: 'conversation',
  call_transfer: 'conversation',
  voicemail_reached: 'voicemail',
  ivr_reached: 'ivr',
  inactivity: 'conversation',
  max_duration_reached: 'conversation',
  concurrency_limit_reached: 'not_connected',
  no_concurrency_fallback: 'not_connected',
  no_valid_payment: 'not_connected',
  scam_detected: 'not_connected',
  dial_busy: 'not_connected',
  dial_failed: 'not_connected',
  dial_no_answer: 'not_connected',
  invalid_destination: 'not_connected',
  telephony_provider_permission_denied: 'not_connected',
  telephony_provider_unavailable: 'not_connected',
  sip_routing_error: 'not_connected',
  marked_as_spam: 'not_connected',
  user_declined: 'not_connected',
  error_llm_websocket_open: 'not_connected',
  error_llm_websocket_lost_connection: 'not_connected',
  error_llm_websocket_runtime: 'not_connected',
  error_llm_websocket_corrupt_payload: 'not_connected',
  error_no_audio_received: 'not_connected',
  error_asr: 'not_connected',
  error_retell: 'not_connected',
  error_unknown: 'not_connected',
  error_user_not_joined: 'not_connected',
  registered_call_timeout: 'not_connected',
  transfer_bridged: 'conversation',
  transfer_cancelled: 'conversation',
  manual_stopped: 'conversation',
  call_take_over: 'conversation',
};

const ended = (reason: string | null, inVoicemail?: boolean) => ({
  status: 'ended',
  finished: true,
  disconnection_reason: reason,
  call_analysis: inVoicemail === undefined ? null : { in_voicemail: inVoicemail },
});

describe('callOutcome', () => {
  it('classifies every disconnection_reason of retell-sdk', () => {
    for (const [reason, outcome] of Object.entries(BY_REASON)) {
      expect(callOutcome(ended(reason)), reason).toBe(outcome);
    }
  });

  it('a phone menu (ivr_reached) is its own outcome, not a conversation, whatever the analysis says', () => {
    expect(callOutcome(ended('ivr_reached', false))).toBe('ivr');
    expect(isDialFailure('ivr_reached')).toBe(false);
  });

  it('a dial failure is not_connected whatever call_status says, even with in_voicemail', () => {
    expect(callOutcome(ended('dial_no_answer', true))).toBe('not_connected');
    expect(isDialFailure('error_some_future_error')).toBe(true);
    expect(isDialFailure('user_hangup')).toBe(false);
    expect(isDialFailure(null)).toBe(false);
  });

  it('in_voicemail alone makes a voicemail; not_connected and error statuses are not_connected', () => {
    expect(callOutcome(ended('agent_hangup', true))).toBe('voicemail');
    expect(callOutcome(ended('agent_hangup', false))).toBe('conversation');
    expect(callOutcome(ended(null))).toBe('conversation');
    for (const status of ['not_connected', 'error']) {
      expect(callOutcome({ ...ended(null), status }), status).toBe('not_connected');
    }
  });

  it('an unfinished call has no outcome yet', () => {
    expect(callOutcome({ ...ended('voicemail_reached'), status: 'ongoing', finished: false })).toBeNull();
  });
});
