// Conversations as turns (core/domain/intake/transcripts.ts): a plain transcript parsed, turns of
// one role merged, and which intake question an agent turn asks.
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { mergeTurns, parseTranscript, questionMatcher } from '../../core/domain/intake/transcripts.js';

const Q = DEFAULT_INTAKE_QUESTIONS;
const questionAsked = questionMatcher(Q);

describe('parseTranscript', () => {
  it('parses transcripts with other role labels and continuation lines', () => {
    expect(parseTranscript('assistant: Hi\ncaller: one\ntwo\nUser: three\n\nAgent: bye')).toEqual([
      { role: 'agent', content: 'Hi' },
      { role: 'user', content: 'one\ntwo\nthree' },
      { role: 'agent', content: 'bye' },
    ]);
  });

  it('gives the user any text before the first label, and reads CRLF line ends', () => {
    expect(parseTranscript('hello there\nAgent: hi')).toEqual([
      { role: 'user', content: 'hello there' },
      { role: 'agent', content: 'hi' },
    ]);
    expect(parseTranscript('Bot: x\r\nCustomer: y\r\nAI: z')).toEqual([
      { role: 'agent', content: 'x' },
      { role: 'user', content: 'y' },
      { role: 'agent', content: 'z' },
    ]);
  });

  it('gives no turns for an empty or blank transcript', () => {
    expect(parseTranscript('')).toEqual([]);
    expect(parseTranscript('\n  \nAgent:   \n')).toEqual([]);
  });
});

describe('mergeTurns', () => {
  it('joins consecutive turns of one role and drops blank ones, without changing its input', () => {
    const turns = [
      { role: 'user' as const, content: 'a' },
      { role: 'user' as const, content: 'b' },
      { role: 'agent' as const, content: 'c' },
      { role: 'user' as const, content: '  ' },
    ];
    const copy = structuredClone(turns);
    expect(mergeTurns(turns)).toEqual([
      { role: 'user', content: 'a\nb' },
      { role: 'agent', content: 'c' },
    ]);
    expect(turns).toEqual(copy);
  });
});

describe('questionMatcher', () => {
  it('finds the question in an agent turn, ignoring case and punctuation', () => {
    expect(questionAsked('Thanks! What is your email address?')?.key).toBe('email');
    expect(questionAsked('WHAT IS YOUR EMAIL ADDRESS')?.key).toBe('email');
  });

  it('takes the question asked last when a turn holds two', () => {
    const turn = 'May I have your full name, please? And what is the best phone number to reach you?';
    expect(questionAsked(turn)?.key).toBe('phone');
  });

  it('is null when no question is asked, and never matches a question with no words', () => {
    expect(questionAsked('Hello there')).toBeNull();
    expect(questionMatcher([{ key: 'odd', question: '?!' }])('?!')).toBeNull();
  });
});
