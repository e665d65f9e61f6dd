// The extraction utility's extractor (core/domain/intake/text-extraction.ts): correct on an
// ordinary note and email, and linear on adversarial text up to the 50,000 characters the
// route takes. Linear is measured as growth, not against a clock budget (test/helpers/growth.ts):
// 10 times the characters (500 → 5,000 → 50,000) may cost at most 30 times as much (linear code
// stays under 10, 20 under heavy load; quadratic code is about 100), so a loaded machine slows both sides alike. The
// steepest growth seen is printed.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  EXTRACT_FIELDS,
  MAX_EXTRACT_CHARS,
  extractFromTextDeterministic,
  pickFields,
} from '../../core/domain/intake/text-extraction.js';
import { describeGrowth, growth, GROWTH_LIMIT, type Growth } from '../helpers/growth.js';

/** Each step is ten times the characters, up to the most the route takes. */
const LENGTHS = [MAX_EXTRACT_CHARS / 10, MAX_EXTRACT_CHARS];
/** Not a budget: only stops a hung run (a quadratic one fails its growth step first). */
const HANG_GUARD_MS = 120_000;
let steepest: { growth: Growth; case: string } | undefined;

/** `unit` repeated to each length: the extractor's cost may grow at most GROWTH_LIMIT times a step. */
function linear(label: string, unit: string): void {
  const measured = growth(
    LENGTHS,
    (length) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length),
    extractFromTextDeterministic,
  );
  if (steepest === undefined || measured.ratio > steepest.growth.ratio)
    steepest = { growth: measured, case: label };
  expect(measured.ratio, `${label}: ${describeGrowth(measured)}`).toBeLessThanOrEqual(GROWTH_LIMIT);
}

afterAll(() => {
  if (steepest !== undefined)
    console.log(`text extraction: steepest growth, ${steepest.case}: ${describeGrowth(steepest.growth)}`);
});

describe('an ordinary note or email', () => {
  it('gives the name, phone (E.164), email (lower-cased), case type, urgency and a summary', () => {
    const email = [
      'Subject: Need help after a crash',
      '',
      'Hello,',
      '',
      "My name is Jane Doe. I was rear-ended on the highway last Tuesday and my neck still hurts; the other driver's insurer keeps calling me.",
      'Please call me back at (415) 555-0123 or write to Jane.Doe@Example.com. It is urgent, I have a deadline tomorrow.',
      '',
      'Thanks, Jane',
    ].join('\n');
    const out = extractFromTextDeterministic(email);
    expect(out).toMatchObject({
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+14155550123',
      email: 'jane.doe@example.com',
      case_type: 'Personal Injury',
      urgency: 'high',
    });
    expect(out.summary).toMatch(/^Jane Doe contacted the firm/);
  });

  it('reads a transcript the way the call pipeline does: the agent’s own examples are not the caller’s', () => {
    const transcript = [
      'Agent: What is the best phone number to reach you? For example (212) 555-0100.',
      'User: it is 617 555 0199, I am Carlos Ruiz and I need a divorce lawyer',
    ].join('\n');
    const out = extractFromTextDeterministic(transcript);
    expect(out.phone).toBe('+16175550199');
    expect(out.case_type).toBe('Family Law');
  });

  it('a text with nothing to find gives nulls, normal urgency and a sentence', () => {
    const out = pickFields(
      { name: null, ...extractFromTextDeterministic('the weather is nice today') },
      undefined,
    );
    expect(out).toEqual({
      name: null,
      first_name: null,
      last_name: null,
      phone: null,
      email: null,
      case_type: null,
      urgency: 'normal',
      summary: expect.any(String),
    });
    expect(Object.keys(out)).toEqual([...EXTRACT_FIELDS]);
  });
});

describe('adversarial text up to 50,000 characters', () => {
  it(
    'runs of what the patterns look for cost at most 30 times as much for 10 times the characters',
    () => {
      const units = [
        '1 ',
        '9',
        '(415) 555-01',
        '+1 4',
        '+',
        'a@a.',
        '@',
        'x.',
        'my name is ',
        "I'm Jane ",
        'Jane ',
        'User: ',
        'Agent: What is your email address?\nUser: a@',
        '\n',
        'divorce urgent ',
        ' at  dot ',
        '\u2028',
      ];
      for (const unit of units) linear(JSON.stringify(unit), unit);
    },
    HANG_GUARD_MS,
  );

  it(
    'generated text (fast-check), repeated to 5,000 and 50,000 characters, grows the same way',
    () => {
      const char = fc.constantFrom(..."aZé1 9\t\n@.,-+():_%!?'’/{}~".split(''), '\u0000');
      const phrase = fc.constantFrom(
        'my name is ',
        ' at ',
        ' dot ',
        'jane.doe@example.com',
        '(415) 555-0123',
        'User: ',
        'Agent: ',
      );
      // What is repeated: a short run unit, or a stretch of speech of up to a few hundred characters.
      const runs = fc.string({ unit: char, minLength: 1, maxLength: 8 });
      const speech = fc
        .array(fc.oneof(phrase, fc.string({ unit: char, maxLength: 40 })), { minLength: 1, maxLength: 20 })
        .map((parts) => parts.join(''))
        .filter((text) => text.length > 0);
      fc.assert(
        fc.property(fc.oneof(runs, speech), (unit) => linear('generated', unit)),
        { numRuns: 60 },
      );
    },
    HANG_GUARD_MS,
  );
});
