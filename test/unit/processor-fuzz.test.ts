// A worker-side fuzz. Schemathesis (npm run fuzz) feeds only the HTTP surface, but the quadratic email regex lived in
// a job. Generated transcripts, provider analysis data, booking payloads and contact rows go
// through the pure parts of the processors that take them; no case may throw — except where a
// typed validation error is the function's contract (snapshotBookingEvent: a 4xx AppError, which
// the webhook answers before any job exists) — and each case's cost must grow linearly with its
// texts: every text of a case is built twice, once as generated and once ten times as long, and
// the long case may cost at most 30 times the short one (linear code stays under 10, quadratic
// code is about 100). A growth ratio, not a clock budget (test/helpers/growth.ts), so a loaded
// machine slows both sides alike. The figures are printed.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_INTAKE_QUESTIONS } from '../../core/domain/agents/agents.js';
import { snapshotBookingEvent, type BookingPayloadInput } from '../../core/domain/bookings/booking-event.js';
import { callOutcome } from '../../core/domain/calls/call-outcome.js';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { parseContactRow } from '../../core/domain/contacts/contact-row.js';
import { analyseIntake } from '../../core/domain/intake/analysis.js';
import { parseTranscript } from '../../core/domain/intake/transcripts.js';
import { AppError } from '../../core/platform/errors.js';
import { BOOKING_TRIGGERS } from '../../jobs/bookings.js';
import { describeGrowth, growthOfScale, GROWTH_LIMIT, type Growth } from '../helpers/growth.js';

/** Cases per property. */
const RUNS = 200;
/** Not a budget: only stops a hung run (a quadratic case fails its growth first). */
const HANG_GUARD_MS = 120_000;

/**
 * A part of a generated case that is built when the case is: a text `scale` times as long as
 * generated (its unit repeated), or a transcript of such texts.
 */
class Scaled {
  constructor(readonly build: (scale: number) => unknown) {}
  /** How fast-check prints a counterexample: the part as generated (the long case is it × 10). */
  [fc.toStringMethod](): string {
    return fc.stringify(this.build(1));
  }
}
const grown = (unit: string, length: number) =>
  new Scaled((scale) =>
    unit === '' ? '' : unit.repeat(Math.ceil((length * scale) / unit.length)).slice(0, length * scale),
  );

/** The case with every Scaled part built at `scale`; arrays and objects copied, keys kept as own keys. */
function build(value: unknown, scale: number): unknown {
  if (value instanceof Scaled) return build(value.build(scale), scale);
  if (Array.isArray(value)) return value.map((v) => build(v, scale));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, build(v, scale)]));
  return value;
}

// Text: the characters the patterns care about, runs of them (what made the email regex quadratic), and
// speech made of the phrases the analysis looks for; each is ten times as long in the long case.
const char = fc.constantFrom(..."aZé1 9\t\n@.,-+():_%!?'’/{}~".split(''), '\u0000', '\u2028');
const randomText = (maxLength: number) => fc.string({ unit: char, maxLength });
const runs = fc
  .tuple(fc.string({ unit: char, minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 1_500 }))
  .map(([unit, times]) => grown(unit, Math.min(unit.length * times, 6_000)));
const phrase = fc.constantFrom(
  'my name is ',
  "I'm Jane ",
  ' at ',
  ' dot ',
  'jane.doe@example.com',
  'a@a.',
  '(415) 555-0123',
  '+1 415 555 01',
  'I was arrested ',
  'court tomorrow',
  'not urgent',
  'divorce ',
  'What is your email address?',
  'What is the best phone number to reach you?',
);
const speech = fc
  .array(fc.oneof(phrase, randomText(40)), { maxLength: 120 })
  .map((parts) => parts.join(''))
  .map((said) => grown(said, said.length));
const text = fc.oneof(
  randomText(500).map((said) => grown(said, said.length)),
  runs,
  speech,
);
const transcript = fc
  .array(fc.tuple(fc.constantFrom('Agent', 'User', 'Caller', 'bot', ''), text), { maxLength: 8 })
  .map(
    (lines) =>
      new Scaled((scale) =>
        lines
          .map(([who, said]) => {
            const line = build(said, scale) as string;
            return who === '' ? line : `${who}: ${line}`;
          })
          .join('\n'),
      ),
  );

const analysisKey = fc.oneof(
  fc.constantFrom('name', 'first_name', 'last_name', 'phone_number', 'email', 'case_type', 'summary'),
  fc.constantFrom('urgency', 'full_name', 'phone', 'description', '__proto__', 'constructor'),
  fc.string({ maxLength: 70 }),
);
const analysisValue = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue(),
);
const analysisData = fc.dictionary(analysisKey, analysisValue, { maxKeys: 25 });

/** A Retell webhook's call object, as loosely as a sender may write it. */
const providerCall = fc.record(
  {
    call_id: fc.string({ minLength: 1, maxLength: 40 }),
    call_status: fc.constantFrom('ongoing', 'ended', 'error', 'not_connected', 'x'),
    disconnection_reason: fc.oneof(fc.constantFrom('user_hangup', 'voicemail_reached', 'dial_busy'), text),
    transcript,
    retell_llm_dynamic_variables: fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(text, fc.integer())),
    call_analysis: fc.record(
      {
        call_summary: fc.oneof(text, fc.constant(null)),
        in_voicemail: fc.boolean(),
        custom_analysis_data: fc.oneof(analysisData, fc.jsonValue()),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['call_id'] },
);

const isoTime = fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
const urlText = fc.oneof(fc.webUrl(), text);
const booking = fc.record(
  {
    uid: fc.oneof(fc.string({ maxLength: 200 }), text),
    startTime: fc.oneof(isoTime, text),
    endTime: fc.oneof(isoTime, text),
    title: fc.oneof(text, fc.constant(null)),
    location: fc.oneof(urlText, fc.constant('integrations:daily'), fc.constant(null)),
    rescheduleUid: fc.oneof(fc.string({ maxLength: 60 }), fc.constant(null)),
    attendees: fc.array(
      fc.record(
        {
          email: fc.oneof(fc.emailAddress(), text, fc.constant(null)),
          name: fc.oneof(text, fc.constant(null)),
          timeZone: fc.oneof(fc.constantFrom('Europe/Paris', 'America/Chicago'), text, fc.constant(null)),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 150 },
    ),
    organizer: fc.record({
      name: fc.oneof(text, fc.constant(null)),
      email: fc.oneof(text, fc.constant(null)),
    }),
    seatsPerTimeSlot: fc.oneof(fc.integer(), fc.jsonValue()),
    metadata: fc.oneof(fc.record({ videoCallUrl: urlText }), fc.jsonValue()),
    videoCallData: fc.oneof(fc.record({ url: urlText }), fc.jsonValue()),
  },
  { requiredKeys: ['uid', 'startTime'] },
);

const rowKey = fc.oneof(
  fc.constantFrom('first_name', 'last_name', 'name', 'company', 'notes', 'source', 'external_id'),
  fc.constantFrom('phone', 'email', 'tags', 'custom', '__proto__', 'constructor'),
  fc.string({ maxLength: 120 }),
);
/** A contacts row: CSV cells (strings), or what a JSON import may carry in their place. */
const row = fc.oneof(
  fc.dictionary(rowKey, text, { maxKeys: 60 }),
  fc.dictionary(rowKey, fc.oneof(text, fc.jsonValue()), { maxKeys: 60 }),
  fc.jsonValue(),
);
const country = fc.constantFrom('US' as const, 'GB' as const, 'DE' as const, 'IN' as const, 'BR' as const);

interface Tally {
  cases: number;
  largest: number;
  steepest: Growth | undefined;
}
const tallies = new Map<string, Tally>();

/**
 * Runs one generated case, built short and ten times as long: it must not throw (unless
 * `allowed` says the error is its contract), and the long case may cost at most GROWTH_LIMIT
 * times the short one.
 */
function linearWithoutThrowing<T>(
  property: string,
  generated: unknown,
  size: (input: T) => number,
  run: (input: T) => void,
  allowed?: (err: unknown) => boolean,
) {
  const measured = growthOfScale(
    (scale) => build(generated, scale) as T,
    size,
    (input) => {
      try {
        run(input);
      } catch (err) {
        if (allowed === undefined || !allowed(err)) throw err;
      }
    },
  );
  const tally = tallies.get(property) ?? { cases: 0, largest: 0, steepest: undefined };
  tally.cases += 1;
  tally.largest = Math.max(tally.largest, measured.largeSize);
  if (tally.steepest === undefined || measured.ratio > tally.steepest.ratio) tally.steepest = measured;
  tallies.set(property, tally);
  expect(measured.ratio, describeGrowth(measured)).toBeLessThanOrEqual(GROWTH_LIMIT);
}

const typedValidationError = (err: unknown) =>
  err instanceof AppError && err.status >= 400 && err.status < 500;

afterAll(() => {
  for (const [property, t] of tallies) {
    console.log(
      `processor fuzz: ${property}: ${t.cases} cases (numRuns ${RUNS}), each built short and 10 times as long; ` +
        `largest input ${t.largest} characters; steepest growth: ${t.steepest === undefined ? '-' : describeGrowth(t.steepest)}`,
    );
  }
});

const jsonSize = (input: unknown) => JSON.stringify(input ?? null).length;

describe('the processors’ pure parts: cost linear in their input, without throwing', () => {
  it(
    'transcripts: parsed and analysed, as a call and as a chat',
    () => {
      fc.assert(
        fc.property(transcript, (said) => {
          linearWithoutThrowing<string>(
            'transcripts',
            said,
            (built) => built.length,
            (built) => {
              const turns = parseTranscript(built);
              analyseIntake({ intakeQuestions: DEFAULT_INTAKE_QUESTIONS, transcript: built });
              analyseIntake({ intakeQuestions: DEFAULT_INTAKE_QUESTIONS, messages: turns });
            },
          );
        }),
        { numRuns: RUNS },
      );
    },
    HANG_GUARD_MS,
  );

  it(
    'analysis data: a Retell call object snapshotted for its job, then analysed as the analyze-call job does',
    () => {
      fc.assert(
        fc.property(providerCall, (generated) => {
          linearWithoutThrowing<Parameters<typeof snapshotProviderCall>[0]>(
            'analysis data',
            generated,
            jsonSize,
            (call) => {
              const snapshot = snapshotProviderCall(call);
              callOutcome({
                status: snapshot.call_status ?? 'ended',
                finished: true,
                disconnection_reason: snapshot.disconnection_reason ?? null,
                call_analysis: snapshot.call_analysis ?? null,
              });
              analyseIntake({
                intakeQuestions: DEFAULT_INTAKE_QUESTIONS,
                transcript: snapshot.transcript ?? '',
                customAnalysisData: snapshot.call_analysis?.custom_analysis_data ?? null,
                dynamicVariables: snapshot.retell_llm_dynamic_variables ?? {},
                providerSummary: snapshot.call_analysis?.call_summary ?? null,
              });
            },
          );
        }),
        { numRuns: RUNS },
      );
    },
    HANG_GUARD_MS,
  );

  it(
    'booking payloads: snapshotted for the booking job (a typed 4xx is its answer to a time that is no time)',
    () => {
      fc.assert(
        fc.property(
          booking,
          fc.constantFrom(...BOOKING_TRIGGERS),
          fc.oneof(isoTime, text),
          (payload, trigger, at) => {
            linearWithoutThrowing<{ payload: BookingPayloadInput; at: string; rawBody: string }>(
              'booking payloads',
              new Scaled((scale) => {
                const built = {
                  payload: build(payload, scale) as BookingPayloadInput,
                  at: build(at, scale) as string,
                };
                return {
                  ...built,
                  rawBody: JSON.stringify({
                    triggerEvent: trigger,
                    createdAt: built.at,
                    payload: built.payload,
                  }),
                };
              }),
              (built) => built.rawBody.length,
              (built) => {
                snapshotBookingEvent({
                  firm: 'firm-a',
                  trigger,
                  createdAt: built.at,
                  payload: built.payload,
                  rawBody: built.rawBody,
                  receivedAt: 0,
                });
              },
              typedValidationError,
            );
          },
        ),
        { numRuns: RUNS },
      );
    },
    HANG_GUARD_MS,
  );

  it(
    'contact rows: each checked and normalised, a bad one answered with its reason',
    () => {
      fc.assert(
        fc.property(row, country, (generated, defaultCountry) => {
          linearWithoutThrowing<unknown>('contact rows', generated, jsonSize, (given) => {
            const parsed = parseContactRow(given, defaultCountry);
            if (!parsed.ok) expect(typeof parsed.reason).toBe('string');
          });
        }),
        { numRuns: RUNS },
      );
    },
    HANG_GUARD_MS,
  );
});
