// Conversations as turns: a plain transcript parsed, turns merged, and which intake question an
// agent turn asks.
import type { ChatRole, ChatTurn } from '../../integrations/chat/engine.js';
import type { IntakeQuestion } from '../agents/agents.js';

export type Turn = ChatTurn;

const ROLE_PREFIX = /^\s*(agent|assistant|bot|ai|user|caller|customer|client|human)\s*:\s?(.*)$/i;

/** "Agent: ...\nUser: ..." into turns; consecutive turns of one role merge; unlabelled text is the user's. */
export function parseTranscript(transcript: string): Turn[] {
  const turns: Turn[] = [];
  for (const line of transcript.split(/\r?\n/)) {
    const match = ROLE_PREFIX.exec(line);
    if (match !== null) {
      const who = match[1]!.toLowerCase();
      const role: ChatRole = ['agent', 'assistant', 'bot', 'ai'].includes(who) ? 'agent' : 'user';
      turns.push({ role, content: match[2] ?? '' });
    } else if (line.trim() !== '') {
      const last = turns[turns.length - 1];
      if (last === undefined) turns.push({ role: 'user', content: line });
      else last.content += `\n${line}`;
    }
  }
  return mergeTurns(turns);
}

export function mergeTurns(turns: readonly Turn[]): Turn[] {
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

/**
 * Which intake question an agent turn asks (the one whose text appears last in it, if any), for
 * one set of questions: each question's text is normalised once here, not once per turn (an
 * analysis asks this of every agent turn, and an agent can have 50 questions of 500 characters).
 */
export function questionMatcher(
  questions: readonly IntakeQuestion[],
): (agentText: string) => IntakeQuestion | null {
  const needles = questions
    .map((q) => ({ q, needle: normaliseText(q.question) }))
    .filter(({ needle }) => needle !== '');
  return (agentText) => {
    const text = normaliseText(agentText);
    let best: IntakeQuestion | null = null;
    let bestAt = -1;
    for (const { q, needle } of needles) {
      const at = text.lastIndexOf(needle);
      if (at > bestAt) {
        best = q;
        bestAt = at;
      }
    }
    return best;
  };
}
