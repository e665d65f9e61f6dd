// Caller data from a call with OpenAI structured output (response_format json_schema, strict):
// the model reads the provider's extracted data, the summary and the transcript and answers
// with exactly the fields a lead needs. Used by the call_analyzed pipeline when OPENAI_API_KEY
// is set; the domain normalises what comes back (E.164 phones, lower-cased emails) and falls
// back to the deterministic extractor field by field.
import OpenAI, { APIConnectionError, APIError } from 'openai';

export const URGENCY_VALUES = ['low', 'normal', 'high', 'urgent'] as const;

export interface CallerExtractionInput {
  transcript: string;
  /** The provider's own extraction (Retell's call_analysis.custom_analysis_data). */
  customAnalysisData: Record<string, unknown>;
  providerSummary: string | null;
  /** What the firm knew before the call (dynamic variables). */
  knownDetails: Record<string, string>;
  /** The agent's intake questions, for context. */
  questions: string[];
}

/** The model's answer, before normalisation: strings as it wrote them, null for "not said". */
export interface ExtractedCaller {
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  email: string | null;
  case_type: string | null;
  summary: string | null;
  urgency: (typeof URGENCY_VALUES)[number] | null;
}

export interface CallerDataExtractor {
  readonly name: 'openai';
  extract(input: CallerExtractionInput): Promise<ExtractedCaller>;
}

/** The extraction failed. `transient`: a later try may work (429, 5xx, network, timeout). */
export class ExtractionError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ExtractionError';
  }
}

const nullableString = (description: string) => ({ type: ['string', 'null'], description });

/** The JSON Schema the model must answer with (strict: every key present, nothing else). */
export const CALLER_DATA_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['first_name', 'last_name', 'phone', 'email', 'case_type', 'summary', 'urgency'],
  properties: {
    first_name: nullableString("The caller's first name, or null if not given"),
    last_name: nullableString("The caller's last name, or null if not given"),
    phone: nullableString('The number to call the caller back on, in E.164 (+14155550123) if possible'),
    email: nullableString("The caller's email address"),
    case_type: nullableString('The practice area, e.g. Personal Injury, Family Law, Criminal Defense'),
    summary: nullableString('Two or three sentences a paralegal can act on'),
    urgency: { type: ['string', 'null'], enum: [...URGENCY_VALUES, null] },
  },
} as const;

const SYSTEM_PROMPT = [
  'You extract client intake data for a law firm from a phone call.',
  "Use only what the caller said or what the provider's extracted data states; never invent values.",
  'Prefer the provider data when it and the transcript agree; prefer the transcript when the caller corrected something.',
  'urgency: urgent (arrest, court today or tomorrow, emergency), high (deadlines, hearings, served papers), low (explicitly no rush), else normal.',
].join('\n');

function userPrompt(input: CallerExtractionInput): string {
  return [
    `Provider summary: ${input.providerSummary ?? '(none)'}`,
    `Provider extracted data (JSON): ${JSON.stringify(input.customAnalysisData).slice(0, 20_000)}`,
    `Known before the call (JSON): ${JSON.stringify(input.knownDetails).slice(0, 5_000)}`,
    `Intake questions: ${input.questions.join(' | ').slice(0, 5_000)}`,
    'Transcript:',
    input.transcript.slice(0, 100_000),
  ].join('\n');
}

/** The characters an extraction sends to the model (system and user prompt): what a budget counts. */
export const extractionPromptChars = (input: CallerExtractionInput): number =>
  SYSTEM_PROMPT.length + userPrompt(input).length;

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

export class OpenAiCallerExtractor implements CallerDataExtractor {
  readonly name = 'openai' as const;
  private readonly client: OpenAI;

  constructor(
    private readonly options: {
      apiKey: string;
      baseUrl: string | undefined;
      model: string;
      timeoutMs?: number;
    },
  ) {
    this.client = new OpenAI({
      apiKey: options.apiKey,
      ...(options.baseUrl === undefined ? {} : { baseURL: options.baseUrl }),
      // The job retries with backoff; the SDK's own retry covers a blip.
      maxRetries: 1,
      timeout: options.timeoutMs ?? 60_000,
    });
  }

  async extract(input: CallerExtractionInput): Promise<ExtractedCaller> {
    let content: string | null | undefined;
    try {
      const completion = await this.client.chat.completions.create({
        model: this.options.model,
        temperature: 0,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: userPrompt(input) },
        ],
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'caller_data',
            strict: true,
            schema: CALLER_DATA_SCHEMA as unknown as Record<string, unknown>,
          },
        },
      });
      content = completion.choices[0]?.message?.content;
    } catch (err) {
      const transient =
        err instanceof APIConnectionError ||
        !(err instanceof APIError) ||
        err.status === undefined ||
        err.status === 408 ||
        err.status === 409 ||
        err.status === 429 ||
        err.status >= 500;
      const status = err instanceof APIError && err.status !== undefined ? ` (status ${err.status})` : '';
      throw new ExtractionError(
        `The extraction model failed${status}: ${(err as Error).message}`,
        transient,
        {
          cause: err,
        },
      );
    }
    let parsed: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(content ?? '');
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new Error('not an object');
      parsed = value as Record<string, unknown>;
    } catch {
      throw new ExtractionError('The extraction model did not answer with the JSON object asked for.', false);
    }
    const urgency = text(parsed.urgency)?.toLowerCase();
    return {
      first_name: text(parsed.first_name),
      last_name: text(parsed.last_name),
      phone: text(parsed.phone),
      email: text(parsed.email),
      case_type: text(parsed.case_type),
      summary: text(parsed.summary),
      urgency: (URGENCY_VALUES as readonly string[]).includes(urgency ?? '')
        ? (urgency as ExtractedCaller['urgency'])
        : null,
    };
  }
}
