// The one intake analysis that chats (end-chat) and calls (the call_analyzed pipeline) share:
// a pure, deterministic function from what was said to the caller data a lead needs. No I/O,
// no clock, no randomness: the same input always gives the same output, so a retried
// pipeline step stores the same result.
import type { CountryCode } from '../contact-points/phones.js';
import { findPhone } from '../contact-points/phones.js';
import { findEmail } from '../contact-points/emails.js';
import { shorten } from '../../platform/text.js';
import type { IntakeQuestion } from '../agents/agents.js';
import { classifyCaseType, classifyUrgency, urgencyValue, type Urgency } from './case-type.js';
import { extractName, splitName } from './names.js';
import { DESCRIPTION_KEY, questionKind, readAnswer, type QuestionKind } from './question-kinds.js';
import { mergeTurns, parseTranscript, questionMatcher, type Turn } from './transcripts.js';
import { own } from '../../platform/own.js';

interface IntakeAnalysisInput {
  /** The agent's intake questions; agent turns that ask one of them pair it with the next user turn. */
  intakeQuestions: readonly IntakeQuestion[];
  /** The conversation as turns (a chat's messages, or a provider's transcript_object). */
  messages?: readonly Turn[];
  /** A plain transcript ("Agent: ...\nUser: ..."); used when `messages` is not given. */
  transcript?: string;
  /** Answers someone already knows per question key; they win over answers read from the turns. */
  answers?: Readonly<Record<string, string>>;
  /** The provider's extracted data (Retell's call_analysis.custom_analysis_data); wins over everything. */
  customAnalysisData?: Readonly<Record<string, unknown>> | null;
  /** Values the firm supplied up front (first_name, phone, email, case_type, ...): the last fallback. */
  dynamicVariables?: Readonly<Record<string, string>>;
  /** A provider-written summary (Retell's call_summary); used when custom data has none. */
  providerSummary?: string | null;
  /** Country for phone numbers written without a country code; default US. */
  defaultCountry?: CountryCode;
  /** How many characters are read; default MAX_ANALYSED_CHARS (the extraction utility reads more). */
  maxChars?: number;
}

/**
 * What an intake collected. Every field is null when nothing usable was found, except
 * summary (always a sentence) and urgency (normal by default).
 */
export interface IntakeAnalysis {
  /** Full name as the person gave it, capitalised when typed all in one case. */
  name: string | null;
  /** First token of the name. */
  first_name: string | null;
  /** The rest of the name, or null for a single-word name. */
  last_name: string | null;
  /** E.164, e.g. +14155550123. */
  phone: string | null;
  /** Trimmed and lower-cased. */
  email: string | null;
  /** A practice area (e.g. "Personal Injury") when recognised, else the person's own words. */
  case_type: string | null;
  /** One short paragraph for a person reading the lead. */
  summary: string;
  urgency: Urgency;
  /** The answer per intake question key (phones in E.164, emails lower-cased). */
  answers: Record<string, string>;
  /** A phone or an email was collected: enough to create a lead. */
  contact_collected: boolean;
}

// The analysis.

/**
 * How much of a conversation the analysis reads: the first 20,000 characters of a transcript,
 * or of a chat's messages (docs/webhooks.md#what-the-analysis-reads). An intake's questions and
 * answers come early (20,000 characters are about 17 minutes of a call), and a bound keeps one
 * job's CPU bounded whatever a caller says: about 0.15 s of CPU on the worst text measured
 * (phone questions answered with digit groups, which the phone search parses one by one), a few
 * milliseconds on ordinary speech.
 */
export const MAX_ANALYSED_CHARS = 20_000;

/** The turns up to `max` characters of content; the turn that crosses it is cut. */
function firstCharacters(turns: readonly Turn[], max: number): Turn[] {
  const kept: Turn[] = [];
  let left = max;
  for (const turn of turns) {
    if (left <= 0) break;
    const content = turn.content.length > left ? turn.content.slice(0, left) : turn.content;
    kept.push({ role: turn.role, content });
    left -= content.length;
  }
  return kept;
}

const CUSTOM_KEYS = {
  name: ['name', 'full_name', 'caller_name', 'client_name', 'contact_name', 'customer_name'],
  first_name: ['first_name', 'caller_first_name', 'firstname'],
  last_name: ['last_name', 'caller_last_name', 'lastname'],
  phone: ['phone', 'phone_number', 'caller_phone', 'callback_number', 'telephone', 'customer_phone'],
  email: ['email', 'email_address', 'caller_email', 'customer_email'],
  case_type: ['case_type', 'matter_type', 'practice_area', 'legal_issue', 'case_category'],
  summary: ['summary', 'case_summary', 'call_summary', 'intake_summary'],
  urgency: ['urgency', 'urgency_level', 'priority'],
} as const;

function stringOf(value: unknown): string | null {
  if (typeof value === 'string') return value.trim() === '' ? null : value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return null;
}

function pick(source: Readonly<Record<string, unknown>> | null | undefined, keys: readonly string[]) {
  if (source === null || source === undefined) return null;
  for (const key of keys) {
    const value = stringOf(own(source, key));
    if (value !== null) return value;
  }
  return null;
}

function firstOf<T>(...candidates: Array<() => T | null>): T | null {
  for (const candidate of candidates) {
    const value = candidate();
    if (value !== null) return value;
  }
  return null;
}

function nameFrom(first: string | null, last: string | null): string | null {
  const joined = [first, last].filter((p): p is string => p !== null).join(' ');
  return joined === '' ? null : joined;
}

/**
 * Extracts caller data from an intake conversation (a chat or a call): its first
 * MAX_ANALYSED_CHARS characters.
 *
 * Precedence per field: `customAnalysisData` (when it holds a usable value) → `answers` →
 * answers read from the turns (the user turn after an agent turn that asks an intake question)
 * → patterns over everything the user said (phones, emails, "my name is ...", practice-area
 * keywords) → `dynamicVariables`. Only the user's side of a conversation is searched, so the
 * agent's own examples ("for example (415) 555-0123") are never taken for the caller's data.
 */
export function analyseIntake(input: IntakeAnalysisInput): IntakeAnalysis {
  const country = input.defaultCountry ?? 'US';
  const questions = input.intakeQuestions;
  const maxChars = input.maxChars ?? MAX_ANALYSED_CHARS;
  const turns = mergeTurns(
    input.messages !== undefined
      ? firstCharacters(input.messages, maxChars)
      : parseTranscript((input.transcript ?? '').slice(0, maxChars)),
  );
  const custom = input.customAnalysisData ?? null;
  const vars = input.dynamicVariables ?? {};

  // Answers per question key: explicit ones, else read from question/answer pairs (a later valid
  // answer to a re-asked question replaces an earlier one). Question keys come from requests
  // ("constructor" is a valid key): Maps and own-property reads only.
  const paired = new Map<string, string>();
  const answeredTurns = new Set<number>();
  const questionAsked = questionMatcher(questions);
  turns.forEach((turn, i) => {
    const next = turns[i + 1];
    if (turn.role !== 'agent' || next === undefined || next.role !== 'user') return;
    const question = questionAsked(turn.content);
    if (question === null) return;
    const kind = questionKind(question.key);
    const value = readAnswer(kind, next.content, country);
    if (value === null) return;
    paired.set(question.key, value);
    if (kind !== 'text' && kind !== 'case_type') answeredTurns.add(i + 1);
  });
  const answers = new Map<string, string>();
  for (const q of questions) {
    const kind = questionKind(q.key);
    const raw = stringOf(own(custom, q.key));
    const fromCustom =
      raw !== null && (kind === 'phone' || kind === 'email') ? readAnswer(kind, raw, country) : raw;
    const given = own(input.answers, q.key);
    const explicit = given === undefined ? null : readAnswer(kind, given, country);
    const value = fromCustom ?? explicit ?? paired.get(q.key) ?? null;
    if (value !== null) answers.set(q.key, value);
  }
  const answerOfKind = (kind: QuestionKind): string | null => {
    const q = questions.find((x) => questionKind(x.key) === kind && answers.has(x.key));
    return q === undefined ? null : answers.get(q.key)!;
  };

  const userTurns = turns.filter((t) => t.role === 'user').map((t) => t.content);
  const userText = userTurns.join('\n');

  const name = firstOf(
    () => pick(custom, CUSTOM_KEYS.name),
    () => nameFrom(pick(custom, CUSTOM_KEYS.first_name), pick(custom, CUSTOM_KEYS.last_name)),
    () => answerOfKind('name'),
    () => nameFrom(answers.get('first_name') ?? null, answers.get('last_name') ?? null),
    () => firstOf(...userTurns.map((t) => () => extractName(t))),
    () => pick(vars, CUSTOM_KEYS.name),
    () => nameFrom(pick(vars, CUSTOM_KEYS.first_name), pick(vars, CUSTOM_KEYS.last_name)),
  );
  const phoneFrom = (value: string | null) => (value === null ? null : findPhone(value, country));
  const phone = firstOf(
    () => phoneFrom(pick(custom, CUSTOM_KEYS.phone)),
    () => answerOfKind('phone'),
    () => phoneFrom(userText),
    () => phoneFrom(pick(vars, CUSTOM_KEYS.phone)),
  );
  const emailFrom = (value: string | null) => (value === null ? null : findEmail(value));
  const email = firstOf(
    () => emailFrom(pick(custom, CUSTOM_KEYS.email)),
    () => answerOfKind('email'),
    () => findEmail(userText),
    () => emailFrom(pick(vars, CUSTOM_KEYS.email)),
  );
  const caseAnswer = answerOfKind('case_type');
  const case_type = firstOf(
    () => pick(custom, CUSTOM_KEYS.case_type),
    () => (caseAnswer === null ? null : (classifyCaseType(caseAnswer) ?? shorten(caseAnswer, 200))),
    () => classifyCaseType(userText),
    () => pick(vars, CUSTOM_KEYS.case_type),
  );

  // Volunteered contact details fill their questions' answers too.
  for (const q of questions) {
    if (answers.has(q.key)) continue;
    const kind = questionKind(q.key);
    const value = kind === 'name' ? name : kind === 'phone' ? phone : kind === 'email' ? email : null;
    if (value !== null) answers.set(q.key, value);
  }

  const urgencyText = [userText, ...answers.values()].join('\n');
  const urgency =
    firstOf(() => {
      const given = pick(custom, CUSTOM_KEYS.urgency);
      return given === null ? null : urgencyValue(given);
    }) ?? classifyUrgency(urgencyText);

  const descriptionKey = questions.find(
    (q) => questionKind(q.key) === 'text' && DESCRIPTION_KEY.test(q.key) && answers.has(q.key),
  )?.key;
  const description =
    descriptionKey !== undefined
      ? answers.get(descriptionKey)!
      : turns
          .filter((t, i) => t.role === 'user' && !answeredTurns.has(i))
          .map((t) => t.content)
          .join(' ');
  const summary =
    firstOf(
      () => pick(custom, CUSTOM_KEYS.summary),
      () => stringOf(input.providerSummary),
    ) ?? composeSummary({ name, phone, email, case_type, urgency, description });

  return {
    name,
    ...splitName(name),
    phone,
    email,
    case_type,
    summary,
    urgency,
    // fromEntries defines own properties, so even a "__proto__" key stays an ordinary answer.
    answers: Object.fromEntries(answers),
    contact_collected: phone !== null || email !== null,
  };
}

function composeSummary(f: {
  name: string | null;
  phone: string | null;
  email: string | null;
  case_type: string | null;
  urgency: Urgency;
  description: string;
}): string {
  const who = f.name ?? 'An unidentified person';
  const parts = [`${who} contacted the firm about a legal matter.`];
  if (f.case_type !== null) parts.push(`Case type: ${f.case_type}.`);
  if (f.description.trim() !== '') parts.push(`In their words: "${shorten(f.description, 400)}"`);
  const contact = [f.phone, f.email].filter((c): c is string => c !== null);
  parts.push(contact.length > 0 ? `Contact: ${contact.join(', ')}.` : 'No contact details were collected.');
  parts.push(`Urgency: ${f.urgency}.`);
  return parts.join(' ');
}
