import { isTimeZone } from '../../platform/time-zone.js';
import type { Services } from '../../wiring/services.js';
import type { ChatBookingProgress, ChatReply, IntakeProgress } from '../../integrations/chat/engine.js';
import { isProviderFailure, offerSlots, spokenTime, type SpokenSlot } from '../appointments/agent-tools.js';
import { bookInConversation } from '../appointments/conversation-booking.js';
import { toE164 } from '../contact-points/phones.js';
import { getFirm } from '../firms/firms.js';
import { questionKind } from '../intake/question-kinds.js';
import type { ChatDoc } from './chats.js';
import { reserveWidgetBooking, visitorMayBook, type ChatVisitor } from './widget-booking-limits.js';

// The built-in intake agent's consultation offer (docs/appointments.md#the-chat-agent): when the
// firm has a booking provider and the intake questions are all answered (an email among them), the
// reply proposes the next free slots, numbered; the person's next message picks one by number and
// the slot is booked (one booking per chat: conversation-booking.ts, so a turn recomputed after a
// lost race books nothing more). An event type that needs the firm's confirmation is a request,
// said as one; Cal.com's refusals are said in words. The engine itself stays pure; this runs beside it.
// A widget visitor's chat books only within the widget's limits (widget-booking-limits.ts: ALTCHA
// before the booking step, one booking per address per day, the firm's daily cap).

/** What a visitor reads when Cal.com fails as they pick a time. */
const CALENDAR_UNREACHABLE_FOR_VISITOR =
  'the calendar cannot be reached right now, so nothing was booked. Reply with the number again in a moment, or the firm will call you back to set a time.';

const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth'];

/** Which offered slot a message picks (1-based digit or an ordinal word), else null. */
export function pickedSlot(message: string, count: number): number | null {
  const digit = /\b([1-9])\b/.exec(message);
  if (digit !== null && Number(digit[1]) <= count) return Number(digit[1]) - 1;
  const lower = message.toLowerCase();
  const word = ORDINALS.findIndex((w, i) => i < count && lower.includes(w));
  return word === -1 ? null : word;
}

const numbered = (offered: ChatBookingProgress['offered']): string =>
  offered.map((s, i) => `${i + 1}) ${s.spoken}`).join('\n');

function answerOfKind(
  chat: ChatDoc,
  progress: IntakeProgress,
  kind: 'name' | 'email' | 'phone',
): string | undefined {
  const key = chat.agent.intake_questions.find((q) => questionKind(q.key) === kind)?.key;
  return key === undefined ? undefined : progress.answers.find((a) => a.key === key)?.value;
}

const complete = (chat: ChatDoc, progress: IntakeProgress | null | undefined): boolean =>
  progress != null && chat.agent.intake_questions.every((q) => progress.answers.some((a) => a.key === q.key));

/** The engine's reply with the booking step added when it applies. */
export async function withBookingStep(
  services: Services,
  chat: ChatDoc,
  message: string,
  reply: ChatReply,
  /** The widget visitor sending it; undefined for a firm's or the platform's own token. */
  visitor?: ChatVisitor,
): Promise<ChatReply> {
  const before = chat.intake_progress ?? null;
  const after = reply.progress;
  if (after === null || chat.agent.intake_questions.length === 0) return reply;
  const state = before?.booking;
  if (state?.booked != null) return { ...reply, progress: { ...after, booking: state } };
  const firm = await getFirm(services.mongo.db, chat.firm);
  if (firm?.settings.booking === undefined) return reply;
  const email = answerOfKind(chat, after, 'email');
  if (email === undefined || !complete(chat, after)) return reply;
  // A widget key without a proof of work offers no times (nor books one offered before it changed).
  if (visitor !== undefined && !(await visitorMayBook(services, visitor))) return reply;
  const tzVar = chat.dynamic_variables.time_zone;
  const timeZone = tzVar !== undefined && isTimeZone(tzVar) ? tzVar : firm.settings.timezone;

  if (state === undefined) {
    // The questions were just answered: offer the next free slots.
    let offered: SpokenSlot[];
    try {
      offered = await offerSlots(services, firm, timeZone);
    } catch (err) {
      // The intake goes on without an offer: its answers are kept, the lead is made at the end.
      if (!isProviderFailure(err)) throw err;
      services.log.warn({ err: err.message, chat: chat._id }, 'booking provider failed during a chat');
      return reply;
    }
    if (offered.length === 0) return reply;
    const booking: ChatBookingProgress = { time_zone: timeZone, offered, booked: null };
    return {
      message: `${reply.message}\n\nWould you like a free consultation? These times are open (${timeZone}):\n${numbered(offered)}\nReply with the number of the time that suits you.`,
      progress: { ...after, booking },
    };
  }

  const pick = pickedSlot(message, state.offered.length);
  if (pick === null) {
    return {
      message: `To book a consultation, reply with the number of one of these times:\n${numbered(state.offered)}`,
      progress: { ...after, booking: state },
    };
  }
  const slot = state.offered[pick]!;
  const reservation =
    visitor === undefined ? null : await reserveWidgetBooking(services, firm, chat._id, visitor);
  if (reservation?.kind === 'address_used' || reservation?.kind === 'firm_cap') {
    return {
      message:
        reservation.kind === 'address_used'
          ? 'You already booked a consultation today from this connection, so no other time was booked; the firm will be in touch.'
          : "The firm's calendar takes no more online bookings today, so nothing was booked; the firm will call you back to set a time.",
      progress: after,
    };
  }
  const release = reservation?.kind === 'reserved' ? reservation.release : async () => undefined;
  // The intake's phone answer, when it is a number Cal.com can take (a calendar may require one).
  const phoneAnswer = answerOfKind(chat, after, 'phone');
  const phone = phoneAnswer === undefined ? undefined : (toE164(phoneAnswer, 'US') ?? undefined);
  let outcome;
  try {
    outcome = await bookInConversation(
      services,
      firm,
      { source: 'chat', id: chat._id },
      {
        start: slot.start,
        attendee: {
          name: answerOfKind(chat, after, 'name') ?? email,
          email,
          timeZone: state.time_zone,
          ...(phone === undefined ? {} : { phone }),
        },
      },
    );
  } catch (err) {
    await release();
    if (!isProviderFailure(err)) throw err;
    // Nothing booked; the offer stays, so the visitor can pick again.
    services.log.warn({ err: err.message, chat: chat._id }, 'booking provider failed during a chat');
    return {
      message: `Sorry, ${CALENDAR_UNREACHABLE_FOR_VISITOR}`,
      progress: { ...after, booking: state },
    };
  }
  if (outcome.kind !== 'booked' && outcome.kind !== 'moved' && outcome.kind !== 'requested') await release();
  switch (outcome.kind) {
    case 'booked':
    case 'moved':
    case 'requested': {
      const spoken = spokenTime(outcome.start, state.time_zone);
      const booked = { booking_uid: outcome.booking_uid, start: outcome.start, spoken };
      return {
        message:
          outcome.kind === 'requested'
            ? `Your consultation is requested for ${spoken} (${state.time_zone}); the firm will confirm it, and you get an email at ${email} when it does.`
            : `Your consultation is booked for ${spoken} (${state.time_zone}). A confirmation goes to ${email}.`,
        progress: { ...after, booking: { ...state, booked } },
      };
    }
    case 'slot_taken':
    case 'not_bookable': {
      const why =
        outcome.kind === 'slot_taken'
          ? 'that time was just taken'
          : 'that time cannot be booked (the firm needs more notice)';
      const offered = outcome.alternatives.map((start) => ({
        start,
        spoken: spokenTime(start, state.time_zone),
      }));
      if (offered.length === 0) {
        return { message: `Sorry, ${why} and nothing else is free this week.`, progress: after };
      }
      return {
        message: `Sorry, ${why}. These are still open:\n${numbered(offered)}\nReply with the number of the time that suits you.`,
        progress: { ...after, booking: { ...state, offered } },
      };
    }
    case 'phone_required':
      return {
        message:
          "Sorry, the firm's calendar needs a phone number to book, so nothing was booked; the firm will call you back to set a time.",
        progress: after,
      };
    case 'cannot_move':
      return {
        message:
          'Sorry, your consultation could not be moved to that time, so nothing was changed; the firm will call you back to set a new time.',
        progress: after,
      };
    case 'booking_limit_reached':
      return {
        message:
          'You already have as many upcoming consultations with the firm as it allows, so no new time was booked; the firm will be in touch.',
        progress: after,
      };
  }
}
