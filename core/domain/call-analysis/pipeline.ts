import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { Services } from '../../wiring/services.js';
import { callEffectsCollection, callsCollection, type CallDoc, type CallEffectsDoc } from '../calls/calls.js';
import { callOutcome } from '../calls/call-outcome.js';
import { extractCallerData, storeExtraction } from './extraction.js';
import { currentAnalysisDigest, isStaleExtraction, reextract } from './re-analysis.js';
import { hasContact } from '../intake/caller-data.js';
import { subjectLeadId } from '../leads/leads.js';
import { recordCallAnalyzed } from '../calls/record-call-events.js';
import type { Attempt } from '../../platform/db/effect-records.js';
import { runCallEffects } from './call-effects.js';

// The call_analyzed pipeline (docs/webhooks.md#the-call_analyzed-pipeline), started by the call-event job
// once a call_analyzed event is applied to the call:
//   analyze-call (job id = firm + call): extract the caller data once and store it on the call;
//   then run the effects — lead, crm, email, team_chat — together, with the call in hand; an
//   effect that fails goes to a call-effect job of its own (job id = firm + call + effect), with
//   its own attempts and backoff (core/domain/call-analysis/call-effects.ts).
// Every step is idempotent on its own (the extraction is stored once, each effect is recorded on
// the call, the lead is a claim), so a delivery repeated after BullMQ has forgotten the first
// jobs starts them again and they find everything done.

/**
 * Starts the pipeline of an analysed call: the job id (with the analysis digest) makes repeats
 * of one analysis no-ops while the job is known; a different analysis is a new job.
 */
export function startCallAnalysis(
  services: Services,
  firm: string,
  callId: string,
  analysis?: string,
): Promise<void> {
  return enqueue(services.queues, JOBS.analyzeCall, {
    firm,
    callId,
    ...(analysis === undefined ? {} : { analysis }),
  });
}

type AnalyzeOutcome =
  'missing' | 'not_connected' | 'voicemail' | 'ivr' | 'extracted' | 'reextracted' | 'already_extracted';

/** The analyze-call job: the extraction (when the call connected), then the call's effects. */
export async function analyseCall(
  services: Services,
  job: { firm: string; callId: string },
  attempt: Attempt,
): Promise<{ outcome: AnalyzeOutcome; effects?: Awaited<ReturnType<typeof runCallEffects>> }> {
  const call = await callsCollection(services.mongo.db).findOne({ _id: job.callId });
  if (call === null || call.firm !== job.firm) return { outcome: 'missing' };
  let outcome: AnalyzeOutcome;
  // The call as call.analyzed tells of it: as read, with the extraction stored now.
  let analysed: CallDoc | null = call;
  const answered = callOutcome(call);
  if (answered !== 'conversation') {
    // No conversation took place (voicemail, a phone menu, not connected): nothing to extract; each effect records itself as skipped.
    outcome = answered ?? 'not_connected';
  } else if (call.extraction !== undefined && isStaleExtraction(call)) {
    await reextract(services, call, attempt.lastAttempt);
    // Replaced now, or by another job meanwhile: read again.
    analysed = await callsCollection(services.mongo.db).findOne({ _id: call._id });
    outcome = 'reextracted';
  } else if (call.extraction !== undefined) {
    outcome = 'already_extracted';
  } else {
    const extraction = await extractCallerData(services, call, attempt.lastAttempt);
    const stored = await storeExtraction(services, call, {
      ...extraction,
      analysis_digest: currentAnalysisDigest(call),
    });
    analysed = { ...call, extraction: stored };
    outcome = 'extracted';
  }
  if (analysed === null) return { outcome };
  // The call's effects document, read once: call.analyzed shows it, and each effect's first look
  // starts from it (the recorder's "from what was seen").
  const read = analysed.finished
    ? { records: await callEffectsCollection(services.mongo.db).findOne({ _id: analysed._id }) }
    : undefined;
  await announceAnalysis(services, analysed, read);
  // The effects, with the call in hand; a failing one is retried by a job of its own.
  return {
    outcome,
    effects: await runCallEffects(services, analysed, attempt, read && { doc: read.records }),
  };
}

/**
 * call.analyzed, with the outcome and the caller data as stored now, before the effects: its
 * `lead_id` is the lead the call's lead effect makes (its id derives from the call), so that
 * what follows about that lead can be matched to the call.
 */
async function announceAnalysis(
  services: Services,
  call: CallDoc,
  read: { records: CallEffectsDoc | null } | undefined,
): Promise<void> {
  const makesLead =
    callOutcome(call) === 'conversation' && call.extraction !== undefined && hasContact(call.extraction);
  const leadId = call.lead_id ?? (makesLead ? subjectLeadId('call', call._id) : null);
  await recordCallAnalyzed(services, call, currentAnalysisDigest(call), leadId, read);
}
