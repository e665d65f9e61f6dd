import { sha256Hex } from '../../platform/crypto.js';
import type { MailMessage } from '../../integrations/mail/mailer.js';
import type { BookingRecord, ReminderRecord } from './reminder-records.js';

// The reminder email: plain text a person reads at a glance, times in the recipient's own time
// zone (the attendee's from Cal.com, else the firm's), written as a date and a clock time rather
// than "in one hour", so a mail delayed by retries is still right. A video meeting's join link
// (an http(s) URL, checked when the event came in: booking-event.ts) is its own line; the
// location is shown unless it is that same link. The mail has no HTML part, so nothing in it
// can be markup.

// ICU puts a narrow no-break space before AM/PM; plain text mail reads better with a space.
const plainSpaces = (text: string): string => text.replace(/[\u202f\u00a0]/g, ' ');

/** "Thursday, March 5, 2026 at 3:30 PM GMT+5:30" in `timeZone`. */
export function formatWhen(ms: number, timeZone: string): string {
  return plainSpaces(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZoneName: 'short',
    }).format(ms),
  );
}

/** "Thu, Mar 5, 3:30 PM GMT+5:30" in `timeZone`, for the subject line. */
function formatShort(ms: number, timeZone: string): string {
  return plainSpaces(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZoneName: 'short',
    }).format(ms),
  );
}

function duration(booking: BookingRecord): string | null {
  if (booking.end_at === undefined) return null;
  const minutes = Math.round((booking.end_at - booking.start_at) / 60_000);
  if (minutes <= 0) return null;
  if (minutes < 60 || minutes % 60 !== 0) return `${minutes} minutes`;
  return minutes === 60 ? '1 hour' : `${minutes / 60} hours`;
}

/** The domain of MAIL_FROM's address, for Message-IDs. */
function mailDomain(mailFrom: string): string {
  const match = /@([A-Za-z0-9.-]+)>?\s*$/.exec(mailFrom);
  return match?.[1] ?? 'intake.invalid';
}

/**
 * One Message-ID per reminder: a repeated send (only after a crash between SMTP's acceptance
 * and our record of it) carries the same id, so mail systems can recognise it.
 */
export function reminderMessageId(mailFrom: string, firm: string, uid: string, field: string): string {
  return `<reminder.${sha256Hex(`${firm}|${uid}|${field}`).slice(0, 32)}@${mailDomain(mailFrom)}>`;
}

export function reminderMail(
  reminder: ReminderRecord,
  booking: BookingRecord,
  messageId: string,
): MailMessage {
  const zone = reminder.time_zone;
  const lines: string[] = [];
  const where = booking.location === booking.join_url ? undefined : booking.location;
  const facts: Array<[string, string | null | undefined]> = [
    ['When', `${formatWhen(booking.start_at, zone)} (${zone})`],
    ['Duration', duration(booking)],
  ];
  if (reminder.role === 'attendee') {
    lines.push(
      `Hello${reminder.name === undefined ? '' : ` ${reminder.name}`},`,
      '',
      `This is a reminder of your appointment "${booking.title}" with ${booking.firm_name}.`,
      '',
    );
    facts.push(['With', booking.organizer], ['Where', where], ['Join', booking.join_url]);
  } else {
    lines.push(`Reminder: the appointment "${booking.title}" is coming up.`, '');
    facts.push(
      ['Attendees', booking.attendees === '' ? null : booking.attendees],
      ['Organizer', booking.organizer],
      ['Where', where],
      ['Join', booking.join_url],
      ['Booking', reminder.booking_uid],
    );
  }
  for (const [label, value] of facts) if (value) lines.push(`${label}: ${value}`);
  lines.push('');
  if (reminder.role === 'attendee') {
    lines.push('To reschedule or cancel, use the links in your booking confirmation.', '', booking.firm_name);
  } else {
    lines.push(`Sent by the Intake Service for ${booking.firm_name}.`);
  }
  const subject =
    reminder.role === 'attendee'
      ? `Reminder: ${booking.title} on ${formatShort(booking.start_at, zone)}`
      : `Reminder: ${booking.title}${booking.attendees === '' ? '' : ` with ${booking.attendees}`} on ${formatShort(booking.start_at, zone)}`;
  return {
    to: [reminder.to],
    subject: subject.length > 250 ? `${subject.slice(0, 249)}…` : subject,
    text: `${lines.join('\n')}\n`,
    messageId,
  };
}
