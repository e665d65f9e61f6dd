// Quadratic regexes, the class and not one instance: every function that runs a regex (or a scan) over
// text a caller, a webhook sender, a CSV or a page visitor controls takes time linear in that
// text (docs/webhooks.md#linear-text-scanning). The quadratic versions took seconds on these
// shapes (the email regex 13 s on 100,000 characters without a space). Measured as growth, not
// against a clock budget: 10 times the characters may cost at most 30 times as much (linear is
// at most 10, 20 on a heavily loaded machine; quadratic about 100), from 1,000 to 10,000 and from 10,000 to 100,000 characters
// (test/helpers/growth.ts), so a busy machine slows both sides of the ratio alike.
import { describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { basicAuthPassword } from '../../core/domain/access/authenticate.js';
import { snapshotBookingEvent, httpUrl } from '../../core/domain/bookings/booking-event.js';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import {
  EMAIL,
  findEmail,
  normalizeEmail,
  readEmailAnswer,
} from '../../core/domain/contact-points/emails.js';
import { findPhone, normalizePhone, parseDialable } from '../../core/domain/contact-points/phones.js';
import { parseContactRow } from '../../core/domain/contacts/contact-row.js';
import { FIRM_SLUG_PATTERN } from '../../core/domain/firms/firm-slug.js';
import { contactSearchTerms, fold, queryPrefixes } from '../../core/domain/contacts/search-terms.js';
import { analyseIntake } from '../../core/domain/intake/analysis.js';
import { classifyCaseType, classifyUrgency, urgencyValue } from '../../core/domain/intake/case-type.js';
import { extractName, splitName } from '../../core/domain/intake/names.js';
import { questionKind, readAnswer } from '../../core/domain/intake/question-kinds.js';
import { parseTranscript, questionMatcher } from '../../core/domain/intake/transcripts.js';
import { detectOptOut, detectOptOutInTranscript } from '../../core/domain/compliance/opt-out.js';
import { workflowOwner } from '../../core/domain/workflows/workflows.js';
import { isCalSignatureForm } from '../../core/integrations/booking/cal-signature.js';
import { fillVariables } from '../../core/integrations/chat/engine.js';
import { isFreshRetellSignature } from '../../core/integrations/voice/webhook-signature.js';
import { assertValidIdempotencyKey } from '../../core/platform/db/idempotency.js';
import { escapeHtml } from '../../core/platform/html.js';
import { parseRetryAfter } from '../../core/platform/retry-after.js';
import { shorten } from '../../core/platform/text.js';
import { maskPersonal } from '../../core/platform/telemetry/scrub.js';
import { urlNotAllowedReason } from '../../core/platform/url-policy.js';
import { escapeHtml as escapeWidgetHtml } from '../../dashboard/widget/page.js';
import { bookingIdPart } from '../../jobs/bookings.js';
import { describeGrowth, growth, GROWTH_LIMIT } from '../helpers/growth.js';

/** The largest input, and the one before it: each step is 10 times the characters. */
const LENGTHS = [10_000, 100_000];

/**
 * Not a budget: the slowest function takes about a second here on a quiet machine, several on a
 * loaded one; the limit only stops a hung run (a quadratic one fails its growth step first).
 */
const HANG_GUARD_MS = 120_000;

const fill = (unit: string, length: number): string =>
  unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

// Runs of each pattern's own character classes, near-matches repeated, white space and digits;
// each ends in a character no pattern expects, so an anchored or trailing match must fail at the
// very end (the case that made the quadratic ones try again from every character).
const UNITS = [
  'a',
  'a.',
  'a@a.',
  'a@',
  '@a.',
  'a-',
  "a'",
  'é',
  '1',
  '1 ',
  '12 ',
  '(1) ',
  '+1',
  '1.',
  '1-2 ',
  ' ',
  ' \t\n',
  ',',
  ',.',
  '.',
  '-',
  '_',
  '~',
  '/',
  ':',
  ' at',
  ' dot',
  '@ ',
  '{{',
  '{{a',
  'court ',
  'my name is ',
  "i'm a ",
  'User: ',
  'Agent: What is your email address?\nUser: ',
];
const SHAPES: Array<[string, (length: number) => string]> = [
  ...UNITS.map((unit): [string, (length: number) => string] => [
    `${JSON.stringify(unit)}… then "!"`,
    (length) => `${fill(unit, length).slice(1)}!`,
  ]),
  ['"a"…', (length) => fill('a', length)],
  ['" "…', (length) => fill(' ', length)],
  ['"my name is " then ","…', (length) => `my name is ${fill(',', length)}x`],
  ['"my name is a" then "."…', (length) => `my name is a${fill('.', length)}x`],
  ['"jane" then " "… then "at"', (length) => `jane${fill(' ', length)}at`],
];

const quietly = (run: () => unknown) => () => {
  try {
    run();
  } catch {
    // A typed validation error is an answer too: only the time it took counts here.
  }
};

const FUNCTIONS: Array<[string, (text: string) => unknown]> = [
  ['findEmail', findEmail],
  ['readEmailAnswer', readEmailAnswer],
  ['normalizeEmail', normalizeEmail],
  ['EMAIL, every match replaced (names.ts)', (t) => t.replace(new RegExp(EMAIL.source, 'g'), ' ')],
  ['findPhone', (t) => findPhone(t)],
  ['detectOptOut', detectOptOut],
  ['detectOptOutInTranscript', detectOptOutInTranscript],
  ['normalizePhone', (t) => normalizePhone(t, 'US')],
  ['parseDialable', parseDialable],
  ['extractName', (t) => extractName(t)],
  ['extractName of a bare answer', (t) => extractName(t, { bare: true })],
  ['splitName', splitName],
  ['classifyCaseType', classifyCaseType],
  ['classifyUrgency', classifyUrgency],
  ['urgencyValue', urgencyValue],
  ['parseTranscript', parseTranscript],
  ['questionMatcher', (t) => questionMatcher(DEFAULT_INTAKE_QUESTIONS)(t)],
  ['questionKind', questionKind],
  [
    'readAnswer of each kind',
    (t) => (['name', 'phone', 'email', 'case_type', 'text'] as const).map((k) => readAnswer(k, t)),
  ],
  [
    'analyseIntake of a transcript',
    (t) => analyseIntake({ intakeQuestions: DEFAULT_INTAKE_QUESTIONS, transcript: t }),
  ],
  [
    'analyseIntake of a chat, custom analysis data and dynamic variables',
    (t) =>
      analyseIntake({
        intakeQuestions: DEFAULT_INTAKE_QUESTIONS,
        messages: [
          { role: 'agent', content: 'What is your email address?' },
          { role: 'user', content: t },
        ],
        customAnalysisData: {
          phone: t.slice(0, 20_000),
          email: t.slice(0, 20_000),
          summary: t.slice(0, 20_000),
        },
        dynamicVariables: { phone: t.slice(0, 2000), email: t.slice(0, 2000) },
        providerSummary: t.slice(0, 20_000),
      }),
  ],
  ['shorten', (t) => shorten(t, 400)],
  ['maskPersonal (spans and the failed-job log)', maskPersonal],
  ['escapeHtml', escapeHtml],
  ['escapeHtml of the widget page', escapeWidgetHtml],
  ['fold (contact search)', fold],
  ['queryPrefixes (contact search)', (t) => quietly(() => queryPrefixes(t))()],
  [
    'contactSearchTerms',
    (t) => contactSearchTerms({ first_name: t, last_name: t, name: t, phone: t, email: t }),
  ],
  [
    'parseContactRow (a CSV row)',
    (t) => parseContactRow({ phone: t, email: t, tags: t, name: t, notes: t, [t.slice(0, 100)]: t }, 'US'),
  ],
  [
    'snapshotProviderCall (a Retell webhook)',
    (t) =>
      snapshotProviderCall({
        call_id: 'call_1',
        transcript: t,
        call_analysis: { call_summary: t, custom_analysis_data: { [t.slice(0, 64)]: t } },
      }),
  ],
  [
    'snapshotBookingEvent (a Cal.com webhook)',
    (t) =>
      snapshotBookingEvent({
        firm: 'firm-a',
        trigger: 'BOOKING_CREATED',
        createdAt: t,
        rawBody: t,
        receivedAt: 0,
        payload: {
          uid: t,
          startTime: '2030-01-01T10:00:00Z',
          title: t,
          location: t,
          attendees: [{ email: t, name: t, timeZone: t }],
          organizer: { name: t, email: t },
          metadata: { videoCallUrl: t },
          videoCallData: { url: `https://${t}` },
        },
      }),
  ],
  ['httpUrl (a booking link)', (t) => httpUrl(`https://${t}`)],
  ['basicAuthPassword', (t) => basicAuthPassword(`Basic ${t}`)],
  ['isFreshRetellSignature', (t) => isFreshRetellSignature(`v=${t}`)],
  ['isCalSignatureForm', isCalSignatureForm],
  ['assertValidIdempotencyKey', (t) => quietly(() => assertValidIdempotencyKey(t))()],
  ['parseRetryAfter', (t) => parseRetryAfter(t)],
  ['urlNotAllowedReason', (t) => urlNotAllowedReason(`https://${t}`, { allowHttpAndLoopback: false })],
  ['fillVariables', (t) => fillVariables(t, { name: t.slice(0, 100) })],
  ['workflowOwner', (t) => workflowOwner(`wf_${t}`)],
  ['bookingIdPart', bookingIdPart],
  [
    'the firm slug pattern (paths, tokens, request schemas)',
    (t) => new RegExp(FIRM_SLUG_PATTERN, 'u').test(t),
  ],
];

describe('every regex over text others control is linear (up to 100,000 adversarial characters each)', () => {
  it.each(FUNCTIONS)(
    '%s',
    (_name, scan) => {
      for (const [shape, make] of SHAPES) {
        const measured = growth(LENGTHS, make, scan);
        expect(measured.ratio, `${shape}: ${describeGrowth(measured)}`).toBeLessThanOrEqual(GROWTH_LIMIT);
      }
    },
    HANG_GUARD_MS,
  );
});
