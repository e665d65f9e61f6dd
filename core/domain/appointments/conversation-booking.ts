import { AppError } from '../../platform/errors.js';
import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import { subjectLeadId } from '../leads/leads.js';
import { bookAppointment, type AppointmentRequest } from './booking.js';
import { appointmentAndSeatOfLead } from './lead-appointment.js';

// A booking made in a conversation (a call's agent tool, the chat agent): one appointment per
// conversation (docs/appointments.md#agent-tools). The first time asked for is booked; another
// time asked for later in the same conversation ("make it Thursday instead") moves that booking
// (Cal.com's reschedule) instead of answering the first one; the time it already has is answered
// as it is. Each (conversation, time asked for, booking it moves) is one idempotency key, so a
// request repeated after a failure, or two at once, does it once. On a seated event type the move
// is of the conversation's seat alone (booking.ts); a seat no longer found is not moved
// (`cannot_move`), since moving the booking would move every other person on it.
//
// Cal.com's refusals come back as outcomes to put in words, not errors: the caller is waiting.

export type ConversationOutcome =
  | {
      kind: 'booked' | 'requested' | 'moved';
      booking_uid: string;
      start: string;
      /** The time it was moved from (moved only). */
      from?: string;
    }
  | { kind: 'slot_taken' | 'not_bookable'; alternatives: string[] }
  | { kind: 'phone_required' | 'booking_limit_reached' | 'cannot_move' };

const REFUSALS: Record<string, ConversationOutcome['kind']> = {
  slot_unavailable: 'slot_taken',
  slot_not_bookable: 'not_bookable',
  attendee_phone_required: 'phone_required',
  booking_limit_reached: 'booking_limit_reached',
  seat_not_found: 'cannot_move',
};

/** Books (or moves the conversation's booking to) `request.start` for conversation `subject`. */
export async function bookInConversation(
  services: Services,
  firm: FirmDoc,
  subject: { source: 'call' | 'chat'; id: string },
  request: Omit<AppointmentRequest, 'leadId' | 'conversationLeadId' | 'rescheduleOf' | 'rescheduleSeat'>,
): Promise<ConversationOutcome> {
  const leadId = subjectLeadId(subject.source, subject.id);
  const recorded = await appointmentAndSeatOfLead(services.mongo.db, leadId);
  const current = recorded?.appointment ?? null;
  const startMs = Date.parse(request.start);
  const live = current !== null && current.status !== 'cancelled' && current.status !== 'rejected';
  if (live && Date.parse(current.start) === startMs) {
    // The time the conversation's booking already has: a repeat, answered as it is.
    return {
      kind: current.status === 'requested' ? 'requested' : 'booked',
      booking_uid: current.booking_uid,
      start: current.start,
    };
  }
  const moving = live ? current : null;
  const asked = Number.isFinite(startMs) ? new Date(startMs).toISOString() : request.start;
  const key = `${subject.source}:${subject.id}|${asked}|${moving?.booking_uid ?? 'new'}`;
  try {
    const { result } = await bookAppointment(
      services,
      firm,
      {
        ...request,
        conversationLeadId: leadId,
        ...(moving === null
          ? {}
          : {
              rescheduleOf: moving.booking_uid,
              ...(recorded?.seat_uid === undefined ? {} : { rescheduleSeat: recorded.seat_uid }),
            }),
      },
      key,
    );
    if (result.status === 'pending')
      return { kind: 'requested', booking_uid: result.booking_uid, start: result.start };
    return moving === null
      ? { kind: 'booked', booking_uid: result.booking_uid, start: result.start }
      : { kind: 'moved', booking_uid: result.booking_uid, start: result.start, from: moving.start };
  } catch (err) {
    const kind = err instanceof AppError ? REFUSALS[err.code] : undefined;
    if (kind === undefined) throw err;
    if (kind === 'slot_taken' || kind === 'not_bookable') {
      const alternatives = ((err as AppError).details ?? []).map((d) => d.message);
      return { kind, alternatives };
    }
    return { kind: kind as 'phone_required' | 'booking_limit_reached' | 'cannot_move' };
  }
}
