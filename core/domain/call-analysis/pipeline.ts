import { CALL_EFFECTS } from '../../../jobs/call-analysis.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { Services } from '../../wiring/services.js';
import { callsCollection } from '../calls/calls.js';
import { extractCallerData, storeExtraction } from './extraction.js';

// The call_analyzed pipeline (CONTRACT §3.12), started by the call-event job once a
// call_analyzed event is applied to the call:
//   analyze-call (job id = firm + call): extract the caller data once and store it on the call;
//   then one call-effect job per effect (job id = firm + call + effect): lead, crm, email,
//   team_chat — each with its own attempts and backoff (core/domain/call-analysis/call-effects.ts).
// Every step is idempotent on its own (the extraction is stored once, each effect is recorded on
// the call, the lead is a claim), so a delivery repeated after BullMQ has forgotten the first
// jobs starts them again and they find everything done.

/** Starts the pipeline of an analysed call: the job id makes repeats no-ops while the job is known. */
export function startCallAnalysis(services: Services, firm: string, callId: string): Promise<void> {
  return enqueue(services.queues, JOBS.analyzeCall, { firm, callId });
}

type AnalyzeOutcome = 'missing' | 'not_connected' | 'extracted' | 'already_extracted';

/** The analyze-call job: the extraction (when the call connected), then each effect's job. */
export async function analyseCall(
  services: Services,
  job: { firm: string; callId: string },
  lastAttempt: boolean,
): Promise<AnalyzeOutcome> {
  const call = await callsCollection(services.mongo.db).findOne({ _id: job.callId });
  if (call === null || call.firm !== job.firm) return 'missing';
  let outcome: AnalyzeOutcome;
  if (call.status !== 'ended') {
    // Nothing was said to extract from; each effect records itself as skipped.
    outcome = 'not_connected';
  } else if (call.extraction !== undefined) {
    outcome = 'already_extracted';
  } else {
    await storeExtraction(services, call, await extractCallerData(services, call, lastAttempt));
    outcome = 'extracted';
  }
  for (const effect of CALL_EFFECTS) {
    await enqueue(services.queues, JOBS.callEffect, { firm: call.firm, callId: call._id, effect });
  }
  return outcome;
}
