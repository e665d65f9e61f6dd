import type { Services } from '../../wiring/services.js';
import { toDialableE164 } from '../contact-points/phones.js';
import { shownCallId, type CallDoc } from '../calls/calls.js';
import { callOutcome } from '../calls/call-outcome.js';
import { addDncEntry, findDncEntry, OPT_OUT_ADDER, type DncSource } from './dnc-store.js';
import { detectOptOut, detectOptOutInTranscript, type OptOut } from './opt-out.js';
import { afterListing } from './dnc-sweep.js';

// An opt-out said in a call or written in a chat puts the person's number on the firm's
// do-not-call list, with the evidence (docs/compliance.md#opt-outs). The entry's _id is the
// claim: a repeated event, a retried job or a second opt-out in the same conversation finds the
// number "already listed" and changes nothing. Either way the firm's queued campaign calls to the
// number are swept (dnc-sweep.ts): a job that died between the two steps is covered by its retry.

export type OptOutListing = 'listed' | 'already_listed' | 'no_opt_out' | 'no_phone';

/** Who the person on a call is: the callee of an outbound call, the caller of an inbound one. */
export const personOfCall = (
  call: Pick<CallDoc, 'direction' | 'from_number' | 'to_number'>,
): string | null => (call.direction === 'outbound' ? call.to_number : call.from_number);

async function list(
  services: Services,
  firm: string,
  phoneOf: () => string | null,
  found: Extract<OptOut, { optOut: true }>,
  source: DncSource,
  subject: { call_id: string } | { chat_id: string },
): Promise<OptOutListing> {
  const phone = phoneOf();
  const e164 = phone === null ? null : toDialableE164(phone);
  const log = services.log;
  if (e164 === null) {
    log.info({ firm, ...subject, source }, 'opt-out without a phone number to list: nothing recorded');
    return 'no_phone';
  }
  const added = await addDncEntry(services.mongo.db, firm, e164, {
    source,
    reason: source === 'call' ? 'Opt-out said in a call' : 'Opt-out written in a chat',
    evidence: { ...subject, words: found.words },
    added_by: OPT_OUT_ADDER,
  });
  if (added) log.info({ firm, ...subject, source }, 'opt-out: number put on the do-not-call list');
  // Listed already by this same opt-out: an attempt that died after listing it, whose dnc.added
  // this one records (the event's key takes it once), as a repeat heals the sweep (below).
  const ours = added || (await isEntryOf(services, firm, e164, subject)) ? [e164] : ([] as string[]);
  // Even when listed already: a repeat heals what an outage left undone.
  await afterListing(services, firm, [e164], ours);
  return added ? 'listed' : 'already_listed';
}

/** Whether the firm's entry for the number is this call's or this chat's opt-out. */
async function isEntryOf(
  services: Services,
  firm: string,
  e164: string,
  subject: { call_id: string } | { chat_id: string },
): Promise<boolean> {
  const entry = await findDncEntry(services.mongo.db, firm, e164);
  if (entry?.added_by !== OPT_OUT_ADDER || entry.evidence === undefined) return false;
  return 'call_id' in subject
    ? entry.evidence.call_id === subject.call_id
    : entry.evidence.chat_id === subject.chat_id;
}

/** A transcript already read for an opt-out, and what was found: not read again. */
export interface ScannedTranscript {
  transcript: string;
  found: OptOut;
}

/** What a transcript holds: read once (detectOptOutInTranscript), for listCallOptOut to reuse. */
export const scanTranscript = (transcript: string): ScannedTranscript => ({
  transcript,
  found: detectOptOutInTranscript(transcript),
});

/**
 * The person's opt-out in a call's transcript (their turns only), onto the firm's list; not in a
 * call that reached voicemail or a phone menu. `scanned`: that transcript read already.
 */
export async function listCallOptOut(
  services: Services,
  call: CallDoc,
  scanned?: ScannedTranscript,
): Promise<OptOutListing> {
  if (call.transcript === null || call.transcript === '') return 'no_opt_out';
  // A voicemail greeting or a phone menu is a machine talking, not the person.
  const outcome = callOutcome(call);
  if (outcome === 'voicemail' || outcome === 'ivr') return 'no_opt_out';
  const found =
    scanned?.transcript === call.transcript ? scanned.found : detectOptOutInTranscript(call.transcript);
  if (!found.optOut) return 'no_opt_out';
  return list(services, call.firm, () => personOfCall(call), found, 'call', { call_id: shownCallId(call) });
}

/**
 * The first opt-out among a chat's messages from the person, onto the firm's list with the
 * chat's phone number, asked for only when there is one; none (the chat has no number yet)
 * records nothing.
 */
export async function listChatOptOut(
  services: Services,
  chat: { _id: string; firm: string; widget_subject?: string },
  userMessages: readonly string[],
  phone: () => string | null,
): Promise<OptOutListing> {
  for (const message of userMessages) {
    const found = detectOptOut(message);
    if (!found.optOut) continue;
    const source = chat.widget_subject === undefined ? 'chat' : 'widget';
    return list(services, chat.firm, phone, found, source, { chat_id: chat._id });
  }
  return 'no_opt_out';
}
