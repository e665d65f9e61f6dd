// Prototype-named keys (found by the API fuzzer, npm run fuzz), the pure half: answers and variables are read
// by own property only, so intake question keys named like Object.prototype members ("constructor",
// "__proto__", ...) are ordinary keys in the analysis and the simulator's script. The same keys over HTTP (a
// simulated call, a chat) are in test/hardening/own-properties.test.ts.
import { describe, expect, it } from 'vitest';
import { analyseIntake } from '../../core/domain/intake/analysis.js';
import { simulateConversation } from '../../core/integrations/voice/simulator-script.js';

/** Every Object.prototype name, for the pure functions (no schema in front of them). */
const PROTO_KEYS = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'];

const question = (key: string) => ({
  key,
  question: `What about ${key.replace(/_/g, ' ')}?`,
});

describe('analyseIntake reads answers by own property only', () => {
  const questions = [
    question('full_name'),
    question('phone'),
    ...PROTO_KEYS.map((key) => ({
      key,
      question: `Tell me your ${key} please.`,
    })),
  ];

  it('unanswered prototype-named questions have no answer, and nothing throws', () => {
    const transcript = [
      'Agent: What about full name?',
      'User: Jane Doe',
      'Agent: What about phone?',
      'User: 415 555 0123',
    ].join('\n');
    const result = analyseIntake({
      transcript,
      intakeQuestions: questions,
      answers: {},
      customAnalysisData: {},
      dynamicVariables: {},
    });
    expect(result.name).toBe('Jane Doe');
    expect(result.phone).toBe('+14155550123');
    expect(Object.keys(result.answers).sort()).toEqual(['full_name', 'phone']);
    for (const key of PROTO_KEYS) expect(Object.hasOwn(result.answers, key), key).toBe(false);
    expect(result.summary).toContain('Jane Doe contacted the firm');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('answered ones are ordinary answers, from the turns, given answers and provider data', () => {
    const transcript = [
      'Agent: Tell me your constructor please.',
      'User: Bob the builder',
      'Agent: Tell me your toString please.',
      'User: a piece of string',
    ].join('\n');
    const given = JSON.parse('{"valueOf": "priceless", "__proto__": "from answers"}') as Record<
      string,
      string
    >;
    const custom = JSON.parse('{"hasOwnProperty": "yes", "isPrototypeOf": "no"}') as Record<string, string>;
    const result = analyseIntake({
      transcript,
      intakeQuestions: questions,
      answers: given,
      customAnalysisData: custom,
      dynamicVariables: JSON.parse('{"constructor": "not this", "name": "Jane Doe"}'),
    });
    expect(Object.entries(result.answers).sort()).toEqual(
      [
        ['full_name', 'Jane Doe'], // the name the variables volunteer
        ['constructor', 'Bob the builder'],
        ['toString', 'a piece of string'],
        ['valueOf', 'priceless'],
        ['__proto__', 'from answers'],
        ['hasOwnProperty', 'yes'],
        ['isPrototypeOf', 'no'],
      ].sort(),
    );
    expect(result.name).toBe('Jane Doe');
  });
});

describe('the simulator answers prototype-named questions like any other', () => {
  const agent = {
    agent_name: 'Sim',
    begin_message: 'Hello.',
    intake_questions: [question('full_name'), ...PROTO_KEYS.map(question)],
  };

  it('without variables of those names: the default answer', () => {
    const conversation = simulateConversation(agent, {}, '+14155550123');
    const data = conversation.call_analysis.custom_analysis_data;
    for (const key of PROTO_KEYS) {
      expect(Object.hasOwn(data, key), key).toBe(true);
      expect(data[key], key).toBe("I'd rather go over that with the attorney directly.");
    }
    expect(data.name).toBe('Jordan Lee');
  });

  it('with variables of those names (own keys, as JSON.parse makes them): their values', () => {
    const vars = JSON.parse(
      `{${PROTO_KEYS.map((k) => `"${k}": "value of ${k}"`).join(', ')}, "full_name": "Ada Lovelace"}`,
    ) as Record<string, string>;
    const data = simulateConversation(agent, vars, '+14155550123').call_analysis.custom_analysis_data;
    for (const key of PROTO_KEYS) expect(data[key], key).toBe(`value of ${key}`);
    expect(data.name).toBe('Ada Lovelace');
  });
});
