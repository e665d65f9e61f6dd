import type { Services } from '../../wiring/services.js';
import {
  ExtractionError,
  extractionPromptChars,
  type ExtractedCaller,
} from '../../integrations/chat/openai-extractor.js';
import { BUDGET_SPENT, spendOpenAiChars } from '../intake/openai-budget.js';
import { DEFAULT_INTAKE_QUESTIONS, findAgent } from '../agents/agents.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { findPhone, toDialableE164, toE164 } from '../contact-points/phones.js';
import { analyseIntake } from '../intake/analysis.js';
import { splitName } from '../intake/names.js';
import { singleLineCallerData, type CallerData } from '../intake/caller-data.js';
import { callsCollection, type CallDoc, type CallExtraction } from '../calls/calls.js';
import { withCallLock } from '../calls/call-lock.js';

// Step one of the call_analyzed pipeline: the caller data, extracted once and stored on the
// call, so every effect (lead, CRM, email, team chat) and every retry uses the same values.
//
// The deterministic extractor (analyseIntake, shared with end-chat) always runs: it reads
// call_analysis.custom_analysis_data first, then the transcript, then the call's dynamic
// variables. With OPENAI_API_KEY set, OpenAI structured output is asked too and wins field by
// field where its answer normalises (a phone that parses, an email that is one); the
// deterministic value fills the rest. An OpenAI failure that may pass (429, 5xx, network) fails
// the job so it is retried with backoff; on the job's last attempt, or for a failure that will
// not pass (a rejected key), the deterministic result is stored with the reason: a lead is never
// lost because the model is unavailable. Each request is counted against the firm's daily OpenAI
// budget first (intake/openai-budget.ts); past it, the deterministic result is stored with that reason.

/**
 * The number on the other end of the line: the caller's for an inbound call, the dialled one else;
 * any number the service may dial, as the lead's phone takes it (a +1 555 number too).
 */
function counterpartNumber(call: CallDoc): string | null {
  const raw = call.direction === 'inbound' ? call.from_number : call.to_number;
  return raw === null ? null : toDialableE164(raw);
}

async function intakeQuestionsOf(services: Services, call: CallDoc) {
  const agent = call.agent_id === null ? null : await findAgent(services.mongo.db, call.agent_id);
  return agent !== null && agent.firm === call.firm ? agent.intake_questions : DEFAULT_INTAKE_QUESTIONS;
}

function deterministic(call: CallDoc, questions: Awaited<ReturnType<typeof intakeQuestionsOf>>): CallerData {
  const analysis = analyseIntake({
    intakeQuestions: questions,
    transcript: call.transcript ?? '',
    customAnalysisData: call.call_analysis?.custom_analysis_data ?? null,
    dynamicVariables: call.dynamic_variables,
    providerSummary: call.call_analysis?.call_summary ?? null,
  });
  return {
    first_name: analysis.first_name,
    last_name: analysis.last_name,
    phone: analysis.phone ?? counterpartNumber(call),
    email: analysis.email,
    case_type: analysis.case_type,
    summary: analysis.summary,
    urgency: analysis.urgency,
  };
}

/** The model's answer where it normalises, the deterministic value elsewhere. */
export function mergeModelAnswer(model: ExtractedCaller, fallback: CallerData): CallerData {
  const phone = model.phone === null ? null : (toE164(model.phone) ?? findPhone(model.phone));
  const email = model.email === null ? null : normalizeEmail(model.email);
  // A name is taken whole from one source, so first and last name always belong together.
  const modelName = model.first_name !== null || model.last_name !== null;
  const name = modelName
    ? model.last_name === null && model.first_name !== null
      ? splitName(model.first_name)
      : { first_name: model.first_name, last_name: model.last_name }
    : { first_name: fallback.first_name, last_name: fallback.last_name };
  return {
    ...name,
    phone: phone ?? fallback.phone,
    email: email ?? fallback.email,
    case_type: model.case_type ?? fallback.case_type,
    summary: model.summary ?? fallback.summary,
    urgency: model.urgency ?? fallback.urgency,
  };
}

/** Extracts the caller data of an analysed call (no write). */
export async function extractCallerData(
  services: Services,
  call: CallDoc,
  lastAttempt: boolean,
): Promise<Omit<CallExtraction, 'extracted_at'>> {
  const questions = await intakeQuestionsOf(services, call);
  // Caller text is made single-line here, once, for every effect that shows it (lead, CRM, mail, Slack).
  const fallback = singleLineCallerData(deterministic(call, questions));
  const extractor = services.extractor;
  if (extractor === null) return { ...fallback, extractor: 'deterministic', fallback_reason: null };
  const input = {
    transcript: call.transcript ?? '',
    customAnalysisData: call.call_analysis?.custom_analysis_data ?? {},
    providerSummary: call.call_analysis?.call_summary ?? null,
    knownDetails: call.dynamic_variables,
    questions: questions.map((q) => q.question),
  };
  // Counted against the firm's daily budget before the request (docs/extract.md#budget).
  if (!(await spendOpenAiChars(services, call.firm, extractionPromptChars(input)))) {
    services.log.info(
      { call_id: call._id, firm: call.firm },
      'OpenAI budget spent; deterministic extraction',
    );
    return { ...fallback, extractor: 'deterministic', fallback_reason: BUDGET_SPENT };
  }
  try {
    const model = await extractor.extract(input);
    return {
      ...singleLineCallerData(mergeModelAnswer(model, fallback)),
      extractor: 'openai',
      fallback_reason: null,
    };
  } catch (err) {
    const transient = !(err instanceof ExtractionError) || err.transient;
    if (transient && !lastAttempt) throw err;
    const reason = (err instanceof Error ? err.message : String(err)).slice(0, 300);
    services.log.warn(
      { call_id: call._id, err: reason },
      'extraction model failed; using the deterministic extractor',
    );
    return { ...fallback, extractor: 'deterministic', fallback_reason: reason };
  }
}

/**
 * Stores the extraction unless the call already has one (first writer wins, under the call's
 * lock); returns the one stored. One write, and a read only when another job stored one first:
 * the write's filter is the check. That is safe on FerretDB, which applies a conditional update
 * as a read and a write of its own (not atomically), only because every writer of `extraction`
 * (this and reextract) holds the call's lock: the filter never races another writer of it.
 */
export async function storeExtraction(
  services: Services,
  call: CallDoc,
  extraction: Omit<CallExtraction, 'extracted_at'>,
): Promise<CallExtraction> {
  return withCallLock(services, call.firm, call._id, async () => {
    const calls = callsCollection(services.mongo.db);
    const stored: CallExtraction = { ...extraction, extracted_at: new Date() };
    const { matchedCount } = await calls.updateOne(
      { _id: call._id, extraction: { $exists: false } },
      { $set: { extraction: stored, updated_at: new Date() } },
    );
    if (matchedCount === 1) return stored;
    // Stored by another job first (or the call is gone): its copy stands.
    const current = await calls.findOne({ _id: call._id }, { projection: { extraction: 1 } });
    return current?.extraction ?? stored;
  });
}
