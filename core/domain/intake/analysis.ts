// The one intake analysis that chats (end-chat) and calls (the call_analyzed pipeline) share:
// a pure, deterministic function from what was said to the caller data a lead needs. No I/O,
// no clock, no randomness: the same input always gives the same output, so a retried
// pipeline step stores the same result.
import { findPhoneNumbersInText, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';
import type { IntakeQuestion } from '../agents/agents.js';
import { own } from '../../platform/own.js';

export type Urgency = 'low' | 'normal' | 'high' | 'urgent';
export type TurnRole = 'agent' | 'user';

export interface Turn {
  role: TurnRole;
  content: string;
}

export interface IntakeAnalysisInput {
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

// ---------------------------------------------------------------------------------------------
// Question kinds: how an answer to a question is read, decided by its key.

export type QuestionKind = 'name' | 'phone' | 'email' | 'case_type' | 'text';

export function questionKind(key: string): QuestionKind {
  const k = key.toLowerCase();
  if (/e_?mail/.test(k)) return 'email';
  if (/phone|mobile|cell|telephone|callback/.test(k)) return 'phone';
  if (/^(?:full_name|name|client_name|caller_name|contact_name|your_name)$/.test(k)) return 'name';
  if (/^(?:case_type|matter_type|practice_area|legal_issue|legal_matter|case_category)$/.test(k)) {
    return 'case_type';
  }
  return 'text';
}

const DESCRIPTION_KEY = /description|details|what_happened|incident|situation|summary|story|issue|problem/;

// ---------------------------------------------------------------------------------------------
// Phones and emails.

/** The first valid phone number in free text, in E.164; null when there is none. */
export function findPhone(text: string, country: CountryCode = 'US'): string | null {
  const whole = parsePhoneNumberFromString(text.trim(), country);
  if (whole?.isValid()) return whole.number;
  for (const found of findPhoneNumbersInText(text, country)) {
    if (found.number.isValid()) return found.number.number;
  }
  return null;
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/;

/** The first email address in free text, lower-cased; null when there is none. */
export function findEmail(text: string): string | null {
  const match = EMAIL.exec(text);
  return match === null ? null : match[0].toLowerCase().replace(/\.+$/, '');
}

/**
 * An email given as the answer to an email question: written ("jane@example.com") or spoken,
 * as voice transcripts have it ("jane dot doe at example dot com").
 */
export function readEmailAnswer(text: string): string | null {
  const written = findEmail(text);
  if (written !== null) return written;
  const spoken = text
    .replace(/\s+at\s+/gi, '@')
    .replace(/\s+dot\s+/gi, '.')
    .replace(/\s*@\s*/g, '@');
  return findEmail(spoken);
}

// ---------------------------------------------------------------------------------------------
// Names.

// Words that follow "I'm" or stand in a short answer but are not names.
const NOT_NAME = new Set(
  (
    'a an the and or but so i im me my mine you your we our they he she it its this that is are was were be ' +
    'been being am have has had do does did dont don’t not no yes yeah yep nope ok okay sure hi hello hey ' +
    'thanks thank please sorry just really very here there calling looking trying writing reaching ' +
    'interested injured hurt scared worried afraid fine good glad happy going getting having need want ' +
    'know unsure what why how who when where which in at on with from about for to of by as if then than ' +
    'lawyer attorney help legal email phone number name case call text message married divorced ' +
    'arrested pregnant unemployed homeless new old still also again anonymous unknown none n/a na skip ' +
    'urgent important regarding'
  ).split(' '),
);

const NAME_TOKEN = /^\p{L}[\p{L}'’.-]*$/u;

function isNameToken(token: string): boolean {
  return NAME_TOKEN.test(token) && !NOT_NAME.has(token.toLowerCase().replace(/[.]+$/, ''));
}

function capitalise(token: string): string {
  if (token !== token.toLowerCase() && token !== token.toUpperCase()) return token;
  return token
    .toLowerCase()
    .replace(/(^|[-'’])(\p{L})/gu, (_m, sep: string, letter: string) => sep + letter.toUpperCase());
}

function formatName(tokens: string[]): string {
  return tokens.map((t) => capitalise(t.replace(/[.,]+$/, ''))).join(' ');
}

/** Name tokens at the start of `rest`, up to four; `capitalised` requires each to start upper-case. */
function leadingNameTokens(rest: string, capitalised: boolean): string[] {
  const tokens: string[] = [];
  for (const raw of rest.split(/\s+/)) {
    const token = raw.replace(/[,;:!?]+$/, '');
    if (token === '' || !isNameToken(token)) break;
    if (capitalised && !/^\p{Lu}/u.test(token)) break;
    tokens.push(token);
    if (tokens.length === 4 || raw !== token) break; // punctuation ends the name
  }
  return tokens;
}

/**
 * A person's name in free text: "my name is jane doe", "I'm Jane", "this is Jane Doe", "call me
 * Jane". With `bare`, a short answer that is only a name ("Jane Doe", "jane") counts too: use it
 * for replies to a name question. Returns the name formatted, or null.
 */
export function extractName(text: string, options: { bare?: boolean } = {}): string | null {
  // Explicit: the words after "my name is" in any case.
  const explicit = /\b(?:my\s+name\s+is|my\s+name['’]s|name\s+is|name['’]s)\s+(.+)/i.exec(text);
  if (explicit?.[1] !== undefined) {
    const tokens = leadingNameTokens(explicit[1], false);
    if (tokens.length > 0) return formatName(tokens);
  }
  // Introductions: only capitalised words, so "I'm calling about" or "this is urgent" are not names.
  const intro = /(?:^|[\s,.!?])(?:i\s+am|i['’]m|this\s+is|call\s+me|it['’]s|it\s+is)\s+(.+)/i.exec(text);
  if (intro?.[1] !== undefined) {
    const tokens = leadingNameTokens(intro[1], true);
    if (tokens.length > 0) return formatName(tokens);
  }
  if (options.bare !== true) return null;
  // A bare answer: drop contact details and edge punctuation; 1–4 name words and nothing else.
  const stripped = text
    .replace(/^\s*(?:(?:sure|yes|yeah|yep|ok|okay|um+|uh+|well|hi|hello|hey)\b[\s,.!-]*)+/i, '')
    .replace(EMAIL, ' ')
    .replace(/\+?\d[\d\s().-]{5,}\d/g, ' ')
    .replace(/^[\s,.;:!?-]+|[\s,.;:!?-]+$/g, '')
    .trim();
  const tokens = stripped.split(/[\s,]+/).filter((t) => t !== '');
  if (tokens.length === 0 || tokens.length > 4 || !tokens.every(isNameToken)) return null;
  return formatName(tokens);
}

export function splitName(name: string | null): { first_name: string | null; last_name: string | null } {
  if (name === null) return { first_name: null, last_name: null };
  const [first, ...rest] = name.split(/\s+/);
  return { first_name: first ?? null, last_name: rest.length > 0 ? rest.join(' ') : null };
}

// ---------------------------------------------------------------------------------------------
// Case type and urgency.

const CASE_TYPES: ReadonlyArray<readonly [string, RegExp]> = [
  ['Workers Compensation', /\bworkers['’]?\s*comp|\b(?:injured|hurt)\s+(?:at|on)\s+(?:work|the job)\b/],
  ['Medical Malpractice', /\bmalpractice\b|\bmisdiagnos|\bsurgical (?:error|mistake)/],
  [
    'Criminal Defense',
    /\b(?:arrest(?:ed)?|criminal|charged with|dui|dwi|felony|misdemeanou?r|probation|warrant|in jail|in custody)\b/,
  ],
  [
    'Personal Injury',
    /\b(?:accident|injury|injuries|injured|crash|collision|slip(?:ped)? and fell|slip and fall|dog bite|whiplash|wreck|personal injury)\b/,
  ],
  [
    'Family Law',
    /\b(?:divorce|custody|child support|alimony|separation|adoption|visitation|prenup(?:tial)?|family law)\b/,
  ],
  [
    'Employment',
    /\b(?:fired|wrongful(?:ly)? terminat\w*|terminated|harass\w*|discriminat\w*|overtime|unpaid wages|employer|employment)\b/,
  ],
  ['Immigration', /\b(?:visa|green card|deport\w*|asylum|immigration|citizenship|naturali[sz]ation)\b/],
  [
    'Estate Planning',
    /\b(?:probate|estate|inheritance|living trust|power of attorney|(?:a|my|her|his) will)\b|\bwills\b/,
  ],
  ['Landlord-Tenant', /\b(?:evict\w*|landlord|tenant|lease)\b/],
  ['Bankruptcy', /\b(?:bankrupt\w*|debt collectors?|creditors?|foreclos\w*)\b/],
];

/** The practice area that free text is about, or null when no keyword matches. */
export function classifyCaseType(text: string): string | null {
  const t = text.toLowerCase();
  for (const [label, pattern] of CASE_TYPES) if (pattern.test(t)) return label;
  return null;
}

const URGENT = [
  /\barrest(?:ed)?\b/,
  /\bin (?:jail|custody)\b/,
  /\bemergency\b/,
  /\b(?:court|hearing|trial|court date)\b[^.!?]{0,40}\b(?:today|tonight|tomorrow)\b/,
  /\b(?:today|tonight|tomorrow)\b[^.!?]{0,40}\b(?:court|hearing|trial)\b/,
  /\b(?:being|getting) deported\b/,
];
const HIGH = [
  /\bdeadlines?\b/,
  /\bcourt date\b/,
  /\bhearing\b/,
  /\b(?:served|subpoena\w*|summons)\b/,
  /\beviction\b|\bbeing evicted\b/,
  /\burgent(?:ly)?\b/,
  /\basap\b|\bas soon as possible\b/,
  /\bthis week\b/,
  /\bstatute of limitations\b/,
];
const LOW = [
  /\bno (?:rush|hurry)\b/,
  /\bnot (?:urgent|an emergency|in a hurry|time[- ]sensitive)\b/,
  /\bjust (?:curious|wondering|exploring|browsing)\b/,
  /\bgeneral question\b/,
  /\bplanning ahead\b/,
  /\bwhenever (?:is )?convenient\b/,
];

/** Urgency from keywords; negated phrases ("not urgent", "no emergency") lower it rather than raise it. */
export function classifyUrgency(text: string): Urgency {
  let t = text.toLowerCase();
  let low = false;
  for (const pattern of LOW) {
    const global = new RegExp(pattern.source, 'g');
    if (global.test(t)) low = true;
    t = t.replace(global, ' ');
  }
  t = t.replace(/\b(?:no|not an?|isn['’]t an?|nothing)\s+(?:emergency|urgent)\b/g, () => {
    low = true;
    return ' ';
  });
  if (URGENT.some((p) => p.test(t))) return 'urgent';
  if (HIGH.some((p) => p.test(t))) return 'high';
  return low ? 'low' : 'normal';
}

function urgencyValue(value: string): Urgency | null {
  const v = value.trim().toLowerCase();
  if (v === 'low' || v === 'normal' || v === 'high' || v === 'urgent') return v;
  if (v === 'medium' || v === 'moderate') return 'normal';
  if (v === 'critical' || v === 'emergency' || v === 'immediate') return 'urgent';
  return null;
}

// ---------------------------------------------------------------------------------------------
// Turns.

const ROLE_PREFIX = /^\s*(agent|assistant|bot|ai|user|caller|customer|client|human)\s*:\s?(.*)$/i;

/** "Agent: ...\nUser: ..." into turns; consecutive turns of one role merge; unlabelled text is the user's. */
export function parseTranscript(transcript: string): Turn[] {
  const turns: Turn[] = [];
  for (const line of transcript.split(/\r?\n/)) {
    const match = ROLE_PREFIX.exec(line);
    if (match !== null) {
      const who = match[1]!.toLowerCase();
      const role: TurnRole = ['agent', 'assistant', 'bot', 'ai'].includes(who) ? 'agent' : 'user';
      turns.push({ role, content: match[2] ?? '' });
    } else if (line.trim() !== '') {
      const last = turns[turns.length - 1];
      if (last === undefined) turns.push({ role: 'user', content: line });
      else last.content += `\n${line}`;
    }
  }
  return mergeTurns(turns);
}

function mergeTurns(turns: readonly Turn[]): Turn[] {
  const merged: Turn[] = [];
  for (const turn of turns) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === turn.role) last.content += `\n${turn.content}`;
    else merged.push({ role: turn.role, content: turn.content });
  }
  return merged.filter((t) => t.content.trim() !== '');
}

const normaliseText = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** The intake question an agent turn asks: the one whose text appears last in it, if any. */
export function questionAsked(
  agentText: string,
  questions: readonly IntakeQuestion[],
): IntakeQuestion | null {
  const text = normaliseText(agentText);
  let best: IntakeQuestion | null = null;
  let bestAt = -1;
  for (const q of questions) {
    const needle = normaliseText(q.question);
    if (needle === '') continue;
    const at = text.lastIndexOf(needle);
    if (at > bestAt) {
      best = q;
      bestAt = at;
    }
  }
  return best;
}

/**
 * Reads the answer to a question of the given kind: a valid phone (E.164), an email, a name,
 * or the trimmed text; null when the reply does not contain a usable answer.
 */
export function readAnswer(kind: QuestionKind, text: string, country: CountryCode = 'US'): string | null {
  switch (kind) {
    case 'phone':
      return findPhone(text, country);
    case 'email':
      return readEmailAnswer(text);
    case 'name':
      return extractName(text, { bare: true });
    case 'case_type':
    case 'text': {
      const trimmed = text.trim();
      return trimmed === '' ? null : trimmed;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The analysis.

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

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

function nameFrom(first: string | null, last: string | null): string | null {
  const joined = [first, last].filter((p): p is string => p !== null).join(' ');
  return joined === '' ? null : joined;
}

/**
 * Extracts caller data from an intake conversation (a chat or a call).
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
  const turns = mergeTurns(
    input.messages ?? (input.transcript === undefined ? [] : parseTranscript(input.transcript)),
  );
  const custom = input.customAnalysisData ?? null;
  const vars = input.dynamicVariables ?? {};

  // Answers per question key: explicit ones, else read from question/answer pairs (a later valid
  // answer to a re-asked question replaces an earlier one). Question keys come from requests
  // ("constructor" is a valid key): Maps and own-property reads only.
  const paired = new Map<string, string>();
  const answeredTurns = new Set<number>();
  turns.forEach((turn, i) => {
    const next = turns[i + 1];
    if (turn.role !== 'agent' || next === undefined || next.role !== 'user') return;
    const question = questionAsked(turn.content, questions);
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
    () => (caseAnswer === null ? null : (classifyCaseType(caseAnswer) ?? truncate(caseAnswer, 200))),
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
  if (f.description.trim() !== '') parts.push(`In their words: "${truncate(f.description, 400)}"`);
  const contact = [f.phone, f.email].filter((c): c is string => c !== null);
  parts.push(contact.length > 0 ? `Contact: ${contact.join(', ')}.` : 'No contact details were collected.');
  parts.push(`Urgency: ${f.urgency}.`);
  return parts.join(' ');
}
