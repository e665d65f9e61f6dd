import type { CallAgentProfile } from './provider.js';
import { own } from '../../platform/own.js';
import type { SimulatedBooking } from './simulator-tools.js';

// What a simulated caller says: the agent asks its intake questions in order and the caller
// answers from the call's dynamic variables (or fixed defaults). Deterministic, so tests and
// the downstream extraction see the same conversation every time.

type SimulatedAgent = CallAgentProfile;

interface SimulatedConversation {
  transcript: string;
  call_analysis: {
    call_summary: string;
    user_sentiment: 'Positive' | 'Neutral' | 'Negative' | 'Unknown';
    call_successful: boolean;
    custom_analysis_data: Record<string, string>;
  };
}

/**
 * The caller of a number ending 3333 opts out (docs/compliance.md#opt-outs): after the agent's
 * greeting they say OPT_OUT_WORDS and the call ends, with no intake. The service puts the number
 * on the firm's do-not-call list from the transcript, as it would for a real caller.
 */
export const optsOut = (toNumber: string): boolean => toNumber.endsWith('3333');
export const OPT_OUT_WORDS = "I'm not interested. Please stop calling me.";

const DEFAULT_NAME = 'Jordan Lee';
const DEFAULT_CASE_TYPE = 'personal injury';
const DEFAULT_DESCRIPTION = 'I was rear-ended at a red light last week and my neck still hurts.';

/** A variable's trimmed value; own properties only, as question keys such as "constructor" are asked too. */
function pick(vars: Record<string, string>, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = own(vars, key);
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

function callerName(vars: Record<string, string>): string {
  const full = pick(vars, 'full_name', 'name', 'caller_name');
  if (full) return full;
  const parts = [pick(vars, 'first_name'), pick(vars, 'last_name')].filter(Boolean);
  return parts.length > 0 ? parts.join(' ') : DEFAULT_NAME;
}

function emailFor(name: string): string {
  const local = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9 ]/g, '')
    .trim()
    .replace(/\s+/g, '.');
  return `${local || 'caller'}@example.com`;
}

/** The caller's answer to one intake question. */
function answerFor(key: string, vars: Record<string, string>, toNumber: string): string {
  const own = pick(vars, key);
  if (own) return own;
  const name = callerName(vars);
  switch (key) {
    case 'full_name':
    case 'name':
      return name;
    case 'first_name':
      return name.split(' ')[0] ?? name;
    case 'last_name':
      return name.split(' ').slice(1).join(' ') || name;
    case 'phone':
    case 'phone_number':
      return pick(vars, 'phone', 'phone_number') ?? toNumber;
    case 'email':
      return pick(vars, 'email') ?? emailFor(name);
    case 'case_type':
      return pick(vars, 'case_type') ?? DEFAULT_CASE_TYPE;
    case 'description':
      return pick(vars, 'description') ?? DEFAULT_DESCRIPTION;
    default:
      return "I'd rather go over that with the attorney directly.";
  }
}

export function simulateConversation(
  agent: SimulatedAgent,
  dynamicVariables: Record<string, string>,
  toNumber: string,
  booking: SimulatedBooking | null = null,
): SimulatedConversation {
  if (optsOut(toNumber)) return optOutConversation(agent);
  const lines: string[] = [`Agent: ${agent.begin_message}`];
  const answers = new Map<string, string>();
  for (const q of agent.intake_questions) {
    const answer = answerFor(q.key, dynamicVariables, toNumber);
    answers.set(q.key, answer);
    lines.push(`Agent: ${q.question}`, `User: ${answer}`);
  }
  const name = answers.get('full_name') ?? answers.get('name') ?? callerName(dynamicVariables);
  const phone =
    answers.get('phone') ?? answers.get('phone_number') ?? pick(dynamicVariables, 'phone') ?? toNumber;
  const email = answers.get('email') ?? pick(dynamicVariables, 'email') ?? emailFor(name);
  const caseType = answers.get('case_type') ?? pick(dynamicVariables, 'case_type') ?? DEFAULT_CASE_TYPE;
  const summary = `${name} called about a ${caseType} matter and can be reached at ${phone} or ${email}.`;
  if (booking !== null) {
    // The 2222 caller's consultation (simulator-tools.ts): what the tools answered, said out loud.
    lines.push('User: Can I book a consultation with an attorney?');
    if (booking.offered.length > 0)
      lines.push(`Agent: I have these times free: ${booking.offered.join('; ')}.`);
    if (booking.booked !== null) lines.push('User: The first one, please.');
    lines.push(`Agent: ${booking.said}`);
  }
  lines.push(
    `Agent: Thank you, ${name.split(' ')[0]}. To summarise: ${summary} Someone will be in touch soon.`,
  );
  lines.push('User: Thank you, goodbye.');
  return {
    transcript: `${lines.join('\n')}\n`,
    call_analysis: {
      call_summary: summary,
      user_sentiment: 'Positive',
      call_successful: true,
      custom_analysis_data: {
        ...Object.fromEntries(answers),
        name,
        phone,
        email,
        case_type: caseType,
        urgency: pick(dynamicVariables, 'urgency') ?? 'normal',
        summary,
      },
    },
  };
}

/** The 3333 caller's conversation: the greeting, the opt-out, the agent's goodbye. */
function optOutConversation(agent: SimulatedAgent): SimulatedConversation {
  const summary = 'The person asked not to be called again.';
  return {
    transcript: [
      `Agent: ${agent.begin_message}`,
      `User: ${OPT_OUT_WORDS}`,
      'Agent: Understood, we will not call you again. Goodbye.',
      '',
    ].join('\n'),
    call_analysis: {
      call_summary: summary,
      user_sentiment: 'Negative',
      call_successful: false,
      custom_analysis_data: { summary },
    },
  };
}
