import { withLeadLock } from '../leads/lead-lock.js';
import { analysisDigest } from '../../../jobs/call-analysis.js';
import type { Services } from '../../wiring/services.js';
import { leadFieldsFrom } from '../intake/caller-data.js';
import { leadsCollection, normaliseLeadFields, subjectLeadId } from '../leads/leads.js';
import { callsCollection, type CallDoc, type CallExtraction } from '../calls/calls.js';
import { withCallLock } from '../calls/call-lock.js';
import { extractCallerData } from './extraction.js';
import { changedFields, recordLeadUpdated } from '../leads/record-lead-events.js';

// Re-analysis: Retell re-runs its post-call analysis and sends a second
// call_analyzed. When what it says differs from the analysis the stored extraction came from,
// the extraction is made again and replaces it, and the call's lead takes the new caller data.
// CRM, email and Slack are not sent again: their records are done and stay done.

/** The digest of the analysis a call holds now (its call_analysis and transcript). */
export const currentAnalysisDigest = (call: CallDoc): string => analysisDigest(call);

/** Whether the call's stored extraction came from another analysis than the one it holds now. */
export function isStaleExtraction(call: CallDoc): boolean {
  const made = call.extraction?.analysis_digest;
  // An extraction stored before digests were kept is taken as current.
  return made !== undefined && made !== currentAnalysisDigest(call);
}

/**
 * Extracts again from the call's current analysis; gives the call's lead the new caller data, then
 * replaces the call's extraction. The lead first: a client that sees the new caller data in
 * get-call finds the lead with it too, and a job that dies between the two writes (the call's
 * extraction still the old one, so still stale) makes both again when it runs again.
 */
export async function reextract(services: Services, call: CallDoc, lastAttempt: boolean): Promise<void> {
  const digest = currentAnalysisDigest(call);
  const calls = callsCollection(services.mongo.db);
  const extractedFrom = async () =>
    (await calls.findOne({ _id: call._id }, { projection: { extraction: 1 } }))?.extraction?.analysis_digest;
  const extraction = await extractCallerData(services, call, lastAttempt);
  // Another job extracted from this same analysis meanwhile: its copy stands, and its lead.
  if ((await extractedFrom()) === digest) return;
  const next: CallExtraction = { ...extraction, analysis_digest: digest, extracted_at: new Date() };
  await updateCallLead(services, call, next);
  await withCallLock(services, call.firm, call._id, async () => {
    if ((await extractedFrom()) === digest) return;
    await calls.updateOne({ _id: call._id }, { $set: { extraction: next, updated_at: new Date() } });
  });
}

/**
 * The call's lead takes the caller data of `extraction`: a point write, nothing when the lead is
 * not made yet (its effect then reads the new extraction), nor when no field changed.
 */
async function updateCallLead(services: Services, call: CallDoc, extraction: CallExtraction): Promise<void> {
  const { fields } = normaliseLeadFields(leadFieldsFrom(extraction));
  const { first_name, last_name, phone, email, case_type, summary, urgency } = fields;
  const next = { first_name, last_name, phone, email, case_type, summary, urgency };
  const leads = leadsCollection(services.mongo.db);
  const leadId = subjectLeadId('call', call._id);
  // Under the lead's lock: its other writers (a workflow's update_lead, the appointment) take turns.
  await withLeadLock(services, call.firm, leadId, async () => {
    const lead = await leads.findOne({ _id: leadId });
    if (lead === null) return;
    // lead.updated only when a field really changed (a re-analysis may say the same of the caller).
    const changed = changedFields(lead, next);
    if (changed.length === 0) return;
    await leads.updateOne({ _id: lead._id }, { $set: next });
    await recordLeadUpdated(services, { ...lead, ...next }, changed, extraction.extracted_at);
  });
}
