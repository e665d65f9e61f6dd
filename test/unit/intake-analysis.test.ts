// analyseIntake: the pure extraction both chats and calls use. No stack needed.
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { analyseIntake } from '../../core/domain/intake/analysis.js';
import { classifyCaseType, classifyUrgency } from '../../core/domain/intake/case-type.js';
import { extractName } from '../../core/domain/intake/names.js';
import { parseTranscript } from '../../core/domain/intake/transcripts.js';
import { findEmail, readEmailAnswer } from '../../core/domain/contact-points/emails.js';
import { findPhone } from '../../core/domain/contact-points/phones.js';

const Q = DEFAULT_INTAKE_QUESTIONS;

describe('names', () => {
  it.each([
    ['my name is Jane Doe', 'Jane Doe'],
    ['Sure, it is Jane Doe.', 'Jane Doe'],
    ['Hi, my name is jane doe and I need help', 'Jane Doe'],
    ["I'm Jane", 'Jane'],
    ["Hello, I'm Jane Doe, I was in an accident", 'Jane Doe'],
    ['This is Carlos Alberto Ruiz.', 'Carlos Alberto Ruiz'],
    ['call me Sam', 'Sam'],
    ["my name's mary-jane o'neil", "Mary-Jane O'Neil"],
    ['My name is McDonald', 'McDonald'],
  ])('finds the name in %j', (text, name) => {
    expect(extractName(text)).toBe(name);
  });

  it.each([
    "I'm calling about a car accident",
    "I'm not sure what to do",
    'this is urgent',
    'I was hurt at work',
    'Jane Doe', // a bare name only counts as the answer to a name question
  ])('finds no name in %j', (text) => {
    expect(extractName(text)).toBeNull();
  });

  it('accepts a bare answer to a name question, and rejects sentences', () => {
    expect(extractName('jane doe', { bare: true })).toBe('Jane Doe');
    expect(extractName('Jane', { bare: true })).toBe('Jane');
    expect(extractName('Sure, jane doe', { bare: true })).toBe('Jane Doe');
    expect(extractName('Jane Doe, jane@example.com', { bare: true })).toBe('Jane Doe');
    expect(extractName("I don't know", { bare: true })).toBeNull();
    expect(extractName('why do you need that?', { bare: true })).toBeNull();
    expect(extractName('415 555 0123', { bare: true })).toBeNull();
  });
});

describe('phones and emails', () => {
  it.each([
    ['(415) 555-0123', '+14155550123'],
    ['415.555.0123', '+14155550123'],
    ['4155550123', '+14155550123'],
    ['call me at 415 555 0123 after 5', '+14155550123'],
    ['+1 212-555-1234', '+12125551234'],
    ['1-800-555-0199', '+18005550199'],
    ['+44 20 7946 0958', '+442079460958'],
  ])('reads %j as %s', (text, e164) => {
    expect(findPhone(text)).toBe(e164);
  });

  it.each(['555-12', '(555) 123-4567', 'no phone', '123'])('finds no valid phone in %j', (text) => {
    expect(findPhone(text)).toBeNull();
  });

  it('reads emails, lower-cased, written or spoken', () => {
    expect(findEmail('write to Jane.Doe+law@Example.COM.')).toBe('jane.doe+law@example.com');
    expect(findEmail('jane at example')).toBeNull();
    expect(findEmail('jane@example')).toBeNull();
    expect(readEmailAnswer("it's jane dot doe at example dot com")).toBe('jane.doe@example.com');
  });
});

describe('urgency and case type', () => {
  it.each([
    ['My son was arrested last night', 'urgent'],
    ['I have a court date tomorrow morning', 'urgent'],
    ['This is an emergency', 'urgent'],
    ['There is a filing deadline next month', 'high'],
    ['I was served with papers', 'high'],
    ['I slipped at the grocery store', 'normal'],
    ['No rush, just curious about my options', 'low'],
    ["It's not an emergency", 'low'],
  ])('%j is %s', (text, urgency) => {
    expect(classifyUrgency(text)).toBe(urgency);
  });

  it.each([
    ['I was rear-ended, a car accident', 'Personal Injury'],
    ['my husband wants a divorce', 'Family Law'],
    ['I got fired after I complained', 'Employment'],
    ['arrested for DUI', 'Criminal Defense'],
    ['my landlord wants to evict me', 'Landlord-Tenant'],
    ['I hurt my back at work', null],
    ['I was injured at work', 'Workers Compensation'],
  ])('%j is %s', (text, caseType) => {
    expect(classifyCaseType(text)).toBe(caseType);
  });
});

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

  it('parses transcripts with other role labels and continuation lines', () => {
    expect(parseTranscript('assistant: Hi\ncaller: one\ntwo\nUser: three\n\nAgent: bye')).toEqual([
      { role: 'agent', content: 'Hi' },
      { role: 'user', content: 'one\ntwo\nthree' },
      { role: 'agent', content: 'bye' },
    ]);
  });
});
