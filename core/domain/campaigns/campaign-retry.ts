import { DEFAULT_RETRY_ON, callOutcome, type CallOutcome } from '../calls/call-outcome.js';
import type { CallDoc } from '../calls/calls.js';
import type { CampaignDoc } from './campaign-store.js';

// Which ended campaign calls reached nobody and are tried again: a call that did not connect,
// reached voicemail or an automated phone menu, as the campaign's `retry_on` says (default all three).
// A dial the provider refused outright (our record has no provider call) is not retried: the
// same request would be refused again.

export const RETRYABLE_OUTCOMES = [
  'not_connected',
  'voicemail',
  'ivr',
] as const satisfies readonly CallOutcome[];
export type RetryableOutcome = (typeof RETRYABLE_OUTCOMES)[number];

export function retryOn(campaign: Pick<CampaignDoc, 'retry_on'>): RetryableOutcome[] {
  return campaign.retry_on ?? (DEFAULT_RETRY_ON as RetryableOutcome[]);
}

/** The call reached nobody and the campaign retries calls that end this way. */
export function isRetriedOutcome(campaign: Pick<CampaignDoc, 'retry_on'>, call: CallDoc): boolean {
  const outcome = callOutcome(call);
  if (outcome === null || outcome === 'conversation' || call.provider_call_id === null) return false;
  return retryOn(campaign).includes(outcome);
}
