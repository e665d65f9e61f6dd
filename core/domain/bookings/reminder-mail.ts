import { sha256Hex } from '../../platform/crypto.js';
import type { MailMessage } from '../../integrations/mail/mailer.js';
import type { BookingRecord, ReminderRecord } from './reminder-records.js';

// The reminder email: plain text a person reads at a glance, times in the recipient's own time
// zone (the attendee's from Cal.com, else the firm's), written as a date and a clock time rather
// than "in one hour", so a mail delayed by retries is still right. A video meeting's join link
// (an http(s) URL, checked when the event came in: booking-event.ts) is its own line; the
// location is shown unless it is that same link. The mail has no HTML part, so nothing in it
// can be markup, and no anchor can be made of what a sender wrote.
//
// The mail goes from the platform's MAIL_FROM to any address a booking names, with text the
// booking's sender wrote (title, location, names): "Your account is locked: verify at
// https://evil.example/login" was once delivered as a reminder. Mail clients make links
// of URLs and host names in plain text too, so that text is defanged (`unlinked`): read as
// words, followed by nobody with a click. The join link is the one link a reminder carries.

/** A word of text, as mail clients find links: up to white space, brackets or quotes. */
const WORD = /[^\s<>()[\]{}"',;]+/gu;
/** An email address: kept as written (a client makes at most a mailto: of it). */
const EMAIL = /^[^@\s/:]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+$/u;
/** A URL scheme ("https://", "ftp://"): bounded, so the scan stays linear. */
const SCHEME = /\b[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\//g;
/** Schemes written without slashes that clients link. */
const BARE_SCHEME = /\b(?:mailto|tel|sms|callto|javascript|data):/gi;
/** A dot inside a host name (a letter label follows). */
const HOST_DOT = /(?<=[\p{L}\p{N}-])\.(?=\p{L}{2})/gu;
const IPV4 = /\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b/g;

/**
 * Sender-written text with nothing a mail client would make a web link of: in each word but an
 * email address, schemes dropped and the dots of host names and IPv4 addresses bracketed
 * ("https://evil.example/login" → "evil[.]example/login").
 */
export function unlinked(text: string): string {
  return text.replace(WORD, (word) =>
    EMAIL.test(word)
      ? word
      : word
          .replace(SCHEME, '')
          .replace(BARE_SCHEME, '')
          .replace(IPV4, '$1[.]$2[.]$3[.]$4')
          .replace(HOST_DOT, '[.]'),
  );
}

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
  const sent = (text: string | undefined): string | undefined =>
    text === undefined ? undefined : unlinked(text);
  const title = unlinked(booking.title);
  const firmName = unlinked(booking.firm_name);
  const organizer = sent(booking.organizer);
  const attendees = unlinked(booking.attendees);
  const where = booking.location === booking.join_url ? undefined : sent(booking.location);
  const facts: Array<[string, string | null | undefined]> = [
    ['When', `${formatWhen(booking.start_at, zone)} (${zone})`],
    ['Duration', duration(booking)],
  ];
  if (reminder.role === 'attendee') {
    lines.push(
      `Hello${reminder.name === undefined ? '' : ` ${unlinked(reminder.name)}`},`,
      '',
      `This is a reminder of your appointment "${title}" with ${firmName}.`,
      '',
    );
    facts.push(['With', organizer], ['Where', where], ['Join', booking.join_url]);
  } else {
    lines.push(`Reminder: the appointment "${title}" is coming up.`, '');
    facts.push(
      ['Attendees', attendees === '' ? null : attendees],
      ['Organizer', organizer],
      ['Where', where],
      ['Join', booking.join_url],
      ['Booking', unlinked(reminder.booking_uid)],
    );
  }
  for (const [label, value] of facts) if (value) lines.push(`${label}: ${value}`);
  lines.push('');
  if (reminder.role === 'attendee') {
    lines.push('To reschedule or cancel, use the links in your booking confirmation.', '', firmName);
  } else {
    lines.push(`Sent by the Intake Service for ${firmName}.`);
  }
  const subject =
    reminder.role === 'attendee'
      ? `Reminder: ${title} on ${formatShort(booking.start_at, zone)}`
      : `Reminder: ${title}${attendees === '' ? '' : ` with ${attendees}`} on ${formatShort(booking.start_at, zone)}`;
  return {
    to: [reminder.to],
    subject: subject.length > 250 ? `${subject.slice(0, 249)}…` : subject,
    text: `${lines.join('\n')}\n`,
    messageId,
  };
}
