import { AppError, invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { isTimeZone } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import { daysFrom, daysFromDate, freeSlots, isAskableEnd } from './availability.js';
import { toE164 } from '../contact-points/phones.js';
import { bookInConversation, type ConversationOutcome } from './conversation-booking.js';

// What an agent calls during a conversation (docs/appointments.md#agent-tools): Retell custom
// functions (check_availability, book_appointment) and the built-in chat intake agent use the
// same two steps. Answers are short and worded for an LLM to read out: times in the person's
// time zone, spelled as a person says them, with the ISO start to book with.

export const TOOL_NAMES = ['check_availability', 'book_appointment'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** What an agent says when Cal.com cannot be reached or refuses: the conversation goes on. */
export const CALENDAR_UNREACHABLE =
  'The calendar cannot be reached right now, so no time was booked. Offer to have someone from the firm call back to set the appointment.';

/**
 * Cal.com failed (`502 booking_provider_error` on the firm's own routes). During a conversation
 * that is something to say, not an error: a caller or a visitor is waiting for an answer.
 */
export const isProviderFailure = (err: unknown): err is AppError =>
  err instanceof AppError && err.code === 'booking_provider_error';

/** How many free slots an agent offers at once. */
export const OFFERED_SLOTS = 5;
/** How far ahead an agent looks when no date is given (days). */
const LOOKAHEAD_DAYS = 7;

export interface SpokenSlot {
  start: string;
  spoken: string;
}

/** "Tuesday, December 1 at 10:30 AM" in `timeZone`. */
export function spokenTime(iso: string, timeZone: string): string {
  const date = new Date(iso);
  const day = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'long',
    month: 'long',
    day: 'numeric',
  }).format(date);
  const time = new Intl.DateTimeFormat('en-US', { timeZone, hour: 'numeric', minute: '2-digit' }).format(
    date,
  );
  return `${day} at ${time}`;
}

/**
 * The next free slots from today, or from `fromDate` (YYYY-MM-DD, a day in `timeZone`), at most
 * OFFERED_SLOTS.
 */
export async function offerSlots(
  services: Services,
  firm: FirmDoc,
  timeZone: string,
  fromDate?: string,
): Promise<SpokenSlot[]> {
  const days =
    fromDate === undefined
      ? daysFrom(Date.now(), LOOKAHEAD_DAYS, timeZone)
      : daysFromDate(fromDate, LOOKAHEAD_DAYS, timeZone);
  const slots = await freeSlots(services, firm, days);
  const now = Date.now();
  return slots
    .filter((s) => Date.parse(s) > now)
    .slice(0, OFFERED_SLOTS)
    .map((start) => ({ start, spoken: spokenTime(start, timeZone) }));
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (args: Record<string, unknown>, key: string): string | undefined => {
  const v = Object.hasOwn(args, key) ? args[key] : undefined;
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
};

/** The caller's time zone: the function's argument, else the call's dynamic variable, else the firm's. */
function timeZoneOf(args: Record<string, unknown>, call: Record<string, unknown>, firm: FirmDoc): string {
  const vars = isObject(call.retell_llm_dynamic_variables) ? call.retell_llm_dynamic_variables : {};
  for (const candidate of [
    str(args, 'timeZone'),
    str(args, 'time_zone'),
    str(vars, 'time_zone'),
    str(vars, 'timeZone'),
  ]) {
    if (candidate !== undefined && isTimeZone(candidate)) return candidate;
  }
  return firm.settings.timezone;
}

/** A tool call: Retell's body `{name, call, args}` as the route validated it. */
export interface ToolCall {
  name: ToolName;
  args: Record<string, unknown>;
  call: Record<string, unknown>;
  /** Our call id (or chat id) the conversation is: one booking per conversation. */
  subject: { source: 'call' | 'chat'; id: string };
}

/** The answer an LLM reads. */
export interface ToolAnswer {
  message: string;
  time_zone?: string;
  slots?: SpokenSlot[];
  /** True only for a confirmed booking (an event type needing confirmation is `requested`). */
  booked?: boolean;
  status?: 'booked' | 'requested' | 'rescheduled';
  /** Why nothing was booked, when Cal.com refused. */
  reason?: 'slot_taken' | 'too_soon_or_far' | 'phone_required' | 'booking_limit_reached' | 'cannot_move';
  booking_uid?: string;
  start?: string;
  spoken?: string;
  alternatives?: SpokenSlot[];
}

export async function runTool(services: Services, firm: FirmDoc, tool: ToolCall): Promise<ToolAnswer> {
  const timeZone = timeZoneOf(tool.args, tool.call, firm);
  if (tool.name === 'check_availability') {
    const date = str(tool.args, 'date');
    let fromDate: string | undefined;
    if (date !== undefined) {
      // The day asked for is a day in the caller's time zone (availability.ts asks Cal.com for it).
      const ms = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00Z`) : NaN;
      if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== date)
        throw invalidRequest('args.date is not a date (YYYY-MM-DD).', [
          { path: '/args/date', message: 'is not a date (YYYY-MM-DD)' },
        ]);
      const today = daysFrom(Date.now(), 1, timeZone).start;
      fromDate = date > today ? date : undefined;
      // The week looked at from that day must end on a day Cal.com can be asked for.
      if (fromDate !== undefined && !isAskableEnd(daysFromDate(fromDate, LOOKAHEAD_DAYS, timeZone).end))
        throw invalidRequest('args.date is too far ahead.', [
          { path: '/args/date', message: 'is too far ahead: the week from it must end by 9999-12-30' },
        ]);
    }
    const slots = await offerSlots(services, firm, timeZone, fromDate);
    return {
      time_zone: timeZone,
      slots,
      message:
        slots.length === 0
          ? 'There are no free appointment times in the next week.'
          : `Free appointment times (${timeZone}): ${slots.map((s) => s.spoken).join('; ')}.`,
    };
  }
  const problems: ErrorDetail[] = [];
  const start = str(tool.args, 'start');
  const name = str(tool.args, 'name');
  const email = str(tool.args, 'email');
  if (start === undefined)
    problems.push({ path: '/args/start', message: 'is required (an ISO start from check_availability)' });
  if (name === undefined) problems.push({ path: '/args/name', message: 'is required' });
  if (email === undefined) problems.push({ path: '/args/email', message: 'is required' });
  if (problems.length > 0) throw invalidRequest('book_appointment needs start, name and email.', problems);
  // The caller's own number when the agent gave none (a calendar may require one).
  const phone = str(tool.args, 'phone') ?? callerNumber(tool.call);
  const notes = str(tool.args, 'notes');
  const outcome = await bookInConversation(services, firm, tool.subject, {
    start: start!,
    attendee: { name: name!, email: email!, timeZone, ...(phone === undefined ? {} : { phone }) },
    ...(notes === undefined ? {} : { notes }),
  });
  return toolAnswer(outcome, { timeZone, email: email!, name: name! });
}

/** The caller's number in E.164 (the other party of an outbound call), if the call names a valid one. */
function callerNumber(call: Record<string, unknown>): string | undefined {
  const number = call.direction === 'outbound' ? call.to_number : call.from_number;
  return typeof number === 'string' ? (toE164(number, 'US') ?? undefined) : undefined;
}

/** What the LLM reads of a booking's outcome. */
function toolAnswer(
  outcome: ConversationOutcome,
  who: { timeZone: string; email: string; name: string },
): ToolAnswer {
  const { timeZone } = who;
  const spokenList = (starts: string[]) =>
    starts.map((start) => ({ start, spoken: spokenTime(start, timeZone) }));
  switch (outcome.kind) {
    case 'booked':
    case 'moved': {
      const spoken = spokenTime(outcome.start, timeZone);
      const from = outcome.from === undefined ? '' : ` instead of ${spokenTime(outcome.from, timeZone)}`;
      return {
        booked: true,
        status: outcome.kind === 'moved' ? 'rescheduled' : 'booked',
        booking_uid: outcome.booking_uid,
        start: outcome.start,
        spoken,
        message:
          outcome.kind === 'moved'
            ? `Moved: the appointment is now ${spoken} (${timeZone})${from}. A confirmation goes to ${who.email}.`
            : `Booked: ${spoken} (${timeZone}). A confirmation goes to ${who.email}.`,
      };
    }
    case 'requested': {
      const spoken = spokenTime(outcome.start, timeZone);
      return {
        booked: false,
        status: 'requested',
        booking_uid: outcome.booking_uid,
        start: outcome.start,
        spoken,
        message: `Requested: ${spoken} (${timeZone}). This time is not confirmed yet: the firm will confirm it, and ${who.email} gets an email when it does.`,
      };
    }
    case 'slot_taken': {
      const alternatives = spokenList(outcome.alternatives);
      return {
        booked: false,
        reason: 'slot_taken',
        alternatives,
        message:
          alternatives.length === 0
            ? 'That time was just taken and nothing else is free this week.'
            : `That time was just taken. Free instead: ${alternatives.map((a) => a.spoken).join('; ')}.`,
      };
    }
    case 'not_bookable': {
      const alternatives = spokenList(outcome.alternatives);
      return {
        booked: false,
        reason: 'too_soon_or_far',
        alternatives,
        message:
          alternatives.length === 0
            ? 'That time cannot be booked: the firm needs more notice, or it is too far ahead, and nothing else is free this week.'
            : `That time cannot be booked: the firm needs more notice, or it is too far ahead. Free instead: ${alternatives.map((a) => a.spoken).join('; ')}.`,
      };
    }
    case 'phone_required':
      return {
        booked: false,
        reason: 'phone_required',
        message:
          "The firm's calendar needs the caller's phone number to book. Ask for it, then call book_appointment again with phone.",
      };
    case 'cannot_move':
      return {
        booked: false,
        reason: 'cannot_move',
        message:
          "The appointment could not be moved: it is a seat in a group session and the firm's calendar no longer shows this caller's seat on it, so nothing was changed. Offer to have someone from the firm call back to set a new time.",
      };
    case 'booking_limit_reached':
      return {
        booked: false,
        reason: 'booking_limit_reached',
        message: `${who.name} already has as many upcoming appointments with the firm as its calendar allows, so no new time was booked. Offer to have someone from the firm call back.`,
      };
  }
}
