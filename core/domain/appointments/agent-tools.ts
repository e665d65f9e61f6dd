import { AppError, invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { isTimeZone } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import { daysFrom, freeSlots } from './availability.js';
import { bookAppointment } from './booking.js';
import { subjectLeadId } from '../leads/leads.js';

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

/** The next free slots from `fromMs` (now, or the day asked for), at most OFFERED_SLOTS. */
export async function offerSlots(
  services: Services,
  firm: FirmDoc,
  timeZone: string,
  fromMs: number = Date.now(),
): Promise<SpokenSlot[]> {
  const slots = await freeSlots(services, firm, daysFrom(fromMs, LOOKAHEAD_DAYS, timeZone));
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
  booked?: boolean;
  booking_uid?: string;
  start?: string;
  spoken?: string;
  alternatives?: SpokenSlot[];
}

export async function runTool(services: Services, firm: FirmDoc, tool: ToolCall): Promise<ToolAnswer> {
  const timeZone = timeZoneOf(tool.args, tool.call, firm);
  if (tool.name === 'check_availability') {
    const date = str(tool.args, 'date');
    let fromMs = Date.now();
    if (date !== undefined) {
      // The day asked for, from its start in the caller's zone (noon UTC is that date everywhere but ±12 h).
      const ms = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T12:00:00Z`) : NaN;
      if (!Number.isFinite(ms))
        throw invalidRequest('args.date is not a date (YYYY-MM-DD).', [
          { path: '/args/date', message: 'is not a date (YYYY-MM-DD)' },
        ]);
      fromMs = Math.max(ms, fromMs);
    }
    const slots = await offerSlots(services, firm, timeZone, fromMs);
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
  const phone = str(tool.args, 'phone');
  const notes = str(tool.args, 'notes');
  try {
    const { result } = await bookAppointment(
      services,
      firm,
      {
        start: start!,
        attendee: { name: name!, email: email!, timeZone, ...(phone === undefined ? {} : { phone }) },
        ...(notes === undefined ? {} : { notes }),
        conversationLeadId: subjectLeadId(tool.subject.source, tool.subject.id),
      },
      // One booking per conversation: the provider's retries and a repeated tool call book once.
      `${tool.subject.source}:${tool.subject.id}`,
    );
    const spoken = spokenTime(result.start, timeZone);
    return {
      booked: true,
      booking_uid: result.booking_uid,
      start: result.start,
      spoken,
      message: `Booked: ${spoken} (${timeZone}). A confirmation goes to ${email}.`,
    };
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'slot_unavailable') throw err;
    // The LLM needs the alternatives to go on: an answer, not an error.
    const alternatives = (err.details ?? []).map((d) => ({
      start: d.message,
      spoken: spokenTime(d.message, timeZone),
    }));
    return {
      booked: false,
      alternatives,
      message:
        alternatives.length === 0
          ? 'That time was just taken and nothing else is free this week.'
          : `That time was just taken. Free instead: ${alternatives.map((a) => a.spoken).join('; ')}.`,
    };
  }
}
