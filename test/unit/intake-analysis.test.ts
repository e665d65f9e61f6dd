// analyseIntake (core/domain/intake/analysis.ts): the pure extraction both chats and calls use,
// from a transcript or turns, given answers, provider data and dynamic variables.
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { MAX_ANALYSED_CHARS, analyseIntake } from '../../core/domain/intake/analysis.js';

const Q = DEFAULT_INTAKE_QUESTIONS;

describe('analyseIntake', () => {
  const transcript = [
    'Agent: Hello, thank you for calling. May I have your full name, please?',
    'User: Sure, it is Jane Doe.',
    'Agent: What is the best phone number to reach you?',
    'User: 415 555 0123',
    'Agent: What is your email address?',
    'User: jane dot doe at example dot com',
    'Agent: What kind of legal matter is this about?',
    'User: A car accident',
    'Agent: Briefly, what happened?',
    'User: I was rear-ended on the highway and my court date is tomorrow.',
  ].join('\n');

  it('reads a transcript through its question/answer pairs', () => {
    const result = analyseIntake({ transcript, intakeQuestions: Q });
    expect(result).toEqual({
      name: 'Jane Doe',
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+14155550123',
      email: 'jane.doe@example.com',
      case_type: 'Personal Injury',
      summary: expect.stringContaining('Jane Doe contacted the firm'),
      urgency: 'urgent',
      answers: {
        full_name: 'Jane Doe',
        phone: '+14155550123',
        email: 'jane.doe@example.com',
        case_type: 'A car accident',
        description: 'I was rear-ended on the highway and my court date is tomorrow.',
      },
      contact_collected: true,
    });
    expect(result.summary).toContain('rear-ended on the highway');
    expect(result.summary).toContain('+14155550123');
    expect(result.summary).toContain('Case type: Personal Injury');
    // Deterministic: the same input gives the same output.
    expect(analyseIntake({ transcript, intakeQuestions: Q })).toEqual(result);
  });

  it('lets custom_analysis_data win, and falls back field by field', () => {
    const result = analyseIntake({
      transcript,
      intakeQuestions: Q,
      customAnalysisData: {
        first_name: 'Janet',
        last_name: 'Smith',
        phone_number: '(212) 555-1234',
        case_type: 'Auto Accident',
        urgency: 'high',
        summary: 'Caller was rear-ended.',
        email: 'not an email',
      },
    });
    expect(result).toMatchObject({
      name: 'Janet Smith',
      phone: '+12125551234',
      case_type: 'Auto Accident',
      urgency: 'high',
      summary: 'Caller was rear-ended.',
      // Unusable custom value: the transcript's answer is used.
      email: 'jane.doe@example.com',
    });
  });

  it('uses explicit answers over the transcript, and dynamic variables last', () => {
    const result = analyseIntake({
      messages: [{ role: 'user', content: 'I need help with a will.' }],
      intakeQuestions: Q,
      answers: { email: 'Given@Example.com' },
      dynamicVariables: { first_name: 'Ann', last_name: 'Lee', phone: '415-555-0199' },
    });
    expect(result).toMatchObject({
      name: 'Ann Lee',
      phone: '+14155550199',
      email: 'given@example.com',
      case_type: 'Estate Planning',
      urgency: 'normal',
      contact_collected: true,
    });
  });

  it('only searches what the user said, never the agent', () => {
    const result = analyseIntake({
      messages: [
        { role: 'agent', content: 'What is the best phone number to reach you? For example (415) 555-0123.' },
        { role: 'user', content: "I'd rather not say." },
        { role: 'agent', content: 'In an emergency write to help@firm.example.' },
      ],
      intakeQuestions: Q,
    });
    expect(result).toMatchObject({
      name: null,
      first_name: null,
      last_name: null,
      phone: null,
      email: null,
      urgency: 'normal',
      contact_collected: false,
    });
    expect(result.summary).toContain('No contact details were collected');
  });

  it('picks up details volunteered out of order', () => {
    const result = analyseIntake({
      messages: [
        { role: 'agent', content: 'Welcome. May I have your full name, please?' },
        { role: 'user', content: 'my name is tom baker, email tom@baker.example, I was arrested' },
      ],
      intakeQuestions: Q,
    });
    expect(result).toMatchObject({
      name: 'Tom Baker',
      email: 'tom@baker.example',
      case_type: 'Criminal Defense',
      urgency: 'urgent',
      answers: { full_name: 'Tom Baker', email: 'tom@baker.example' },
    });
  });
});

describe('what the analysis reads (docs/webhooks.md#what-the-analysis-reads)', () => {
  const said = (chars: number) => `User: ${'I was hurt. '.repeat(Math.ceil(chars / 11)).slice(0, chars)}\n`;

  it('reads the first MAX_ANALYSED_CHARS characters of a transcript, not what comes after', () => {
    const early = `${said(1000)}User: write to jane@example.com\n${said(MAX_ANALYSED_CHARS)}`;
    const late = `${said(MAX_ANALYSED_CHARS)}User: write to jane@example.com\n`;
    expect(analyseIntake({ transcript: early, intakeQuestions: Q }).email).toBe('jane@example.com');
    expect(analyseIntake({ transcript: late, intakeQuestions: Q }).email).toBeNull();
  });

  it("reads the first MAX_ANALYSED_CHARS characters of a chat's messages, cutting the one that crosses it", () => {
    const messages = [
      { role: 'user' as const, content: 'x'.repeat(MAX_ANALYSED_CHARS - 20) },
      { role: 'agent' as const, content: 'Thanks.' },
      { role: 'user' as const, content: 'mail me: jane@example.com, or bob@example.com' },
    ];
    // The cut leaves "mail me: jane": no address is read.
    expect(analyseIntake({ messages, intakeQuestions: Q }).email).toBeNull();
    messages[0]!.content = 'x'.repeat(MAX_ANALYSED_CHARS - 80);
    expect(analyseIntake({ messages, intakeQuestions: Q }).email).toBe('jane@example.com');
  });
});

describe("the intake questions' texts", () => {
  it('are read once an analysis, however many agent turns ask them', () => {
    // Each question's text counts its reads: the analysis matches every agent turn against all
    // of them, and an agent may have 50 questions of 500 characters over a long call.
    let reads = 0;
    const questions = Q.map((q) => ({
      key: q.key,
      get question() {
        reads += 1;
        return q.question;
      },
    }));
    const turns = Array.from({ length: 40 }, (_, i) =>
      [`Agent: ${Q[i % Q.length]!.question}`, `User: answer ${i}`].join('\n'),
    ).join('\n');
    const result = analyseIntake({ transcript: turns, intakeQuestions: questions });
    // The turns were matched: the last description asked is paired with its answer.
    expect(result.answers.description).toBe('answer 39');
    expect(reads).toBe(Q.length);
  });
});
