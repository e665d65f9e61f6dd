// The extraction utility (POST /api/utils/extract, docs/extract.md): the call pipeline's own
// extractor on any text — a note, an email, a transcript. The deterministic analysis
// (analyseIntake, unlabelled text read as the person's own words) always runs; with
// OPENAI_API_KEY set, OpenAI structured output is asked too and wins field by field where its
// answer normalises, exactly as for a call (call-analysis/extraction.ts). A model that fails, or a
// firm past its daily OpenAI budget (openai-budget.ts), leaves the deterministic answer: a utility
// answers what it can rather than a 502.
import type { Services } from '../../wiring/services.js';
import { mergeModelAnswer } from '../call-analysis/extraction.js';
import { extractionPromptChars } from '../../integrations/chat/openai-extractor.js';
import { spendOpenAiChars } from './openai-budget.js';
import { analyseIntake } from './analysis.js';
import { displayName, singleLineCallerData, type CallerData } from './caller-data.js';

/** The longest text the utility takes (characters). */
export const MAX_EXTRACT_CHARS = 50_000;

export const EXTRACT_FIELDS = [
  'name',
  'first_name',
  'last_name',
  'phone',
  'email',
  'case_type',
  'urgency',
  'summary',
] as const;
export type ExtractField = (typeof EXTRACT_FIELDS)[number];

export type TextExtraction = CallerData & { name: string | null };

/** The deterministic extraction alone: pure, linear in the text (test/unit/text-extraction.test.ts). */
export function extractFromTextDeterministic(text: string): CallerData {
  const analysis = analyseIntake({ intakeQuestions: [], transcript: text, maxChars: MAX_EXTRACT_CHARS });
  return {
    first_name: analysis.first_name,
    last_name: analysis.last_name,
    phone: analysis.phone,
    email: analysis.email,
    case_type: analysis.case_type,
    summary: analysis.summary,
    urgency: analysis.urgency,
  };
}

export async function extractFromText(
  services: Services,
  firm: string,
  text: string,
): Promise<TextExtraction> {
  const fallback = extractFromTextDeterministic(text);
  let data = fallback;
  const input = {
    transcript: text,
    customAnalysisData: {},
    providerSummary: null,
    knownDetails: {},
    questions: [],
  };
  // Counted against the firm's daily OpenAI budget before the request; past it, deterministic only.
  if (services.extractor !== null && (await spendOpenAiChars(services, firm, extractionPromptChars(input)))) {
    try {
      const model = await services.extractor.extract(input);
      data = mergeModelAnswer(model, fallback);
    } catch (err) {
      services.log.warn(
        { err: (err as Error).message },
        'extraction model failed; the deterministic answer is used',
      );
    }
  }
  const line = singleLineCallerData(data);
  return { name: displayName(line), ...line };
}

/** The extraction with only the fields asked for (all when `fields` is absent), in the usual order. */
export function pickFields(
  extraction: TextExtraction,
  fields: readonly ExtractField[] | undefined,
): Partial<TextExtraction> {
  const wanted = new Set<ExtractField>(fields ?? EXTRACT_FIELDS);
  return Object.fromEntries(EXTRACT_FIELDS.filter((f) => wanted.has(f)).map((f) => [f, extraction[f]]));
}
