import type { Services } from '../../wiring/services.js';
import { recordEvent } from '../events/record-event.js';
import { shownCallId, withCallEffects, type CallDoc, type CallEffectsDoc } from './calls.js';
import { callView } from './call-view.js';

// The call.* domain events (docs/events.md#event-types), recorded by the step that made the
// change, keyed so that a repeated provider event or a retried job records each once. Their
// subject is the call's id as the API shows it (shownCallId), as their data's call_id.

/** call.started: the provider said the call started (its call_started event). */
export async function recordCallStarted(
  services: Services,
  call: CallDoc,
  receivedAt: number,
): Promise<string> {
  return recordEvent(services, {
    firm: call.firm,
    type: 'call.started',
    subject: shownCallId(call),
    key: 'started',
    occurred_at: new Date(call.start_timestamp ?? receivedAt),
    data: callView(await withCallEffects(services.mongo.db, call)),
  });
}

/**
 * call.ended: the call is finished, however it ended (ended, not connected, error, blocked). Its
 * effects are not read: none can have run yet when call.ended is first recorded. Only the job
 * that applies a call_analyzed starts the analysis (and so the effects), and it records
 * call.ended first (onCallFinished, workers/processors/calls.ts); a recording after that is a
 * repeat its key refuses, whatever it carries. So the event shows the effects as the call's end
 * left them: none, or a call stored before they moved to their own document (its own).
 */
export async function recordCallEnded(services: Services, call: CallDoc): Promise<string> {
  return recordEvent(services, {
    firm: call.firm,
    type: 'call.ended',
    subject: shownCallId(call),
    key: 'ended',
    occurred_at: new Date(call.end_timestamp ?? call.updated_at.getTime()),
    data: callView(call),
  });
}

/**
 * call.analyzed: the provider's analysis is in and the caller data extracted (once per
 * analysis: a re-analysis that says something else is another event). `leadId`: the lead the
 * call makes (its lead effect creates it next), or null when it makes none. `read`: the call's
 * effects document as the caller read it just now.
 */
export async function recordCallAnalyzed(
  services: Services,
  call: CallDoc,
  analysisDigest: string,
  leadId: string | null,
  read?: { records: CallEffectsDoc | null },
): Promise<string> {
  return recordEvent(services, {
    firm: call.firm,
    type: 'call.analyzed',
    subject: shownCallId(call),
    key: `analyzed|${analysisDigest}`,
    occurred_at: call.extraction?.extracted_at ?? call.updated_at,
    data: { ...callView(await withCallEffects(services.mongo.db, call, read)), lead_id: leadId },
  });
}
