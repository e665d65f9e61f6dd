// The built-in intake agent: works offline and answers deterministically. It asks the agent's
// intake questions in order, reads phones, emails and names out of free text (also when they
// come before their question), re-asks with a hint when a phone or email answer is not one,
// and closes with a summary of what it collected.
//
// Its progress (the answers so far) is a value: it comes in with each turn and goes out with the
// reply, and the chat stores it with the exchange, so a turn reads only its new message however
// long the chat is. A chat without stored progress has it rebuilt once from its
// user messages (which the chat's length limit bounds). A reply depends only on the progress and
// the message, which is what lets the chat domain retry on a conflict.
import type { IntakeQuestion } from '../agents/agents.js';
import { shorten } from '../../platform/text.js';
import { findEmail } from '../contact-points/emails.js';
import { findPhone } from '../contact-points/phones.js';
import { extractName, splitName } from './names.js';
import { questionKind, readAnswer, type QuestionKind } from './question-kinds.js';
import {
  fillVariables,
  type ChatEngine,
  type ChatEngineInput,
  type ChatOpening,
  type ChatReply,
  type IntakeProgress,
} from '../../integrations/chat/engine.js';

/**
 * The answer per question key so far. The question the agent asked last and waits for is always
 * the first one without an answer (answers given early only ever fill later questions).
 */
type Answers = Map<string, string>;

const pendingQuestion = (questions: readonly IntakeQuestion[], answers: Answers): IntakeQuestion | null =>
  questions.find((q) => !answers.has(q.key)) ?? null;

const HINTS: Partial<Record<QuestionKind, string>> = {
  phone:
    "Sorry, I couldn't find a valid phone number in that. Please include the area code, for example (415) 555-0123.",
  email: "Sorry, that doesn't look like a complete email address. Please type it like name@example.com.",
  name: "Sorry, I didn't catch your name. Please tell me your first and last name, for example Jane Doe.",
};

const NOTED_LABEL: Partial<Record<QuestionKind, string>> = {
  phone: 'phone number',
  email: 'email address',
  name: 'name',
};

export const INTAKE_COMPLETE_REPLY =
  'Thank you. Your intake is already complete and our team has your details; someone will contact you soon. ' +
  'Anything else you write here is kept with your intake.';

const NO_QUESTIONS_REPLY =
  'Thank you for your message. A member of our team will review it and contact you soon.';

function humanise(key: string): string {
  const words = key.replace(/_+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function listing(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Contact details a message volunteers for questions not asked yet. */
function volunteered(text: string, kind: QuestionKind): string | null {
  if (kind === 'phone') return findPhone(text);
  if (kind === 'email') return findEmail(text);
  if (kind === 'name') return extractName(text);
  return null;
}

function summaryReply(questions: readonly IntakeQuestion[], answers: Answers): string {
  const nameKey = questions.find((q) => questionKind(q.key) === 'name')?.key;
  const first = nameKey === undefined ? null : splitName(answers.get(nameKey) ?? null).first_name;
  const lines = questions.map((q) => `- ${humanise(q.key)}: ${shorten(answers.get(q.key) ?? '', 300)}`);
  return [
    `Thank you${first === null ? '' : `, ${first}`}. Here is a summary of what I collected:`,
    ...lines,
    'A member of our team will review your information and contact you soon.',
  ].join('\n');
}

/** Takes one user message into `answers` and returns the agent's reply to it. */
function step(questions: readonly IntakeQuestion[], answers: Answers, text: string): string {
  if (questions.length === 0) return NO_QUESTIONS_REPLY;
  const pending = pendingQuestion(questions, answers);
  if (pending === null) return INTAKE_COMPLETE_REPLY;

  const pendingKind = questionKind(pending.key);
  const answer = readAnswer(pendingKind, text);
  if (answer !== null) answers.set(pending.key, answer);

  // Answers given early: the first unanswered question of each contact kind takes a value the
  // message carries, unless that value already answers another question.
  const noted: string[] = [];
  const used = new Set(answers.values());
  const seenKinds = new Set<QuestionKind>();
  for (const q of questions) {
    const kind = questionKind(q.key);
    if (answers.has(q.key) || seenKinds.has(kind)) continue;
    seenKinds.add(kind);
    const value = volunteered(text, kind);
    if (value === null || used.has(value)) continue;
    answers.set(q.key, value);
    used.add(value);
    noted.push(NOTED_LABEL[kind]!);
  }
  const notedSentence = noted.length === 0 ? null : `I've noted your ${listing(noted)}.`;

  if (answer === null) {
    // Not an answer: a hint, unless the message did bring something else; then ask again.
    return [notedSentence === null ? HINTS[pendingKind] : `Thank you. ${notedSentence}`, pending.question]
      .filter((p): p is string => p !== undefined)
      .join(' ');
  }

  const next = pendingQuestion(questions, answers);
  if (next === null) return summaryReply(questions, answers);
  const thanks =
    pendingKind === 'name' ? `Thank you, ${splitName(answer).first_name ?? answer}.` : 'Thank you.';
  return [thanks, notedSentence, next.question].filter((p): p is string => p !== null).join(' ');
}

/** The answers after the user messages `previous`, replayed in order. */
function replay(questions: readonly IntakeQuestion[], previous: readonly string[]): Answers {
  const answers: Answers = new Map();
  for (const text of previous) step(questions, answers, text);
  return answers;
}

class IntakeAgentEngine implements ChatEngine {
  readonly name = 'intake' as const;

  greeting({ agent, dynamicVariables }: ChatOpening): string | null {
    const parts = [
      fillVariables(agent.begin_message, dynamicVariables).trim(),
      agent.intake_questions[0]?.question,
    ];
    const text = parts.filter((p): p is string => p !== undefined && p !== '').join(' ');
    return text === '' ? null : text;
  }

  async reply({ agent, history, progress }: ChatEngineInput, message: string): Promise<ChatReply> {
    const questions = agent.intake_questions;
    const answers: Answers =
      progress === null
        ? replay(
            questions,
            history.filter((m) => m.role === 'user').map((m) => m.content),
          )
        : new Map(progress.answers.map((a) => [a.key, a.value]));
    const reply = step(questions, answers, message);
    const kept: IntakeProgress = { answers: [...answers].map(([key, value]) => ({ key, value })) };
    return { message: reply, progress: kept };
  }
}

/** The reply to `message` after the earlier user messages `previous` (replayed in order). */
export function intakeReply(
  questions: readonly IntakeQuestion[],
  previous: readonly string[],
  message: string,
) {
  return step(questions, replay(questions, previous), message);
}

/** The built-in intake agent: the chat engine when no LLM is configured. */
export const intakeAgent: ChatEngine = new IntakeAgentEngine();
