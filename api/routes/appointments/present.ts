import type { Static } from '@sinclair/typebox';
import type { AppointmentResult } from '../../../core/domain/appointments/booking.js';
import { statusOfCalBooking } from '../../../core/domain/appointments/lead-appointment.js';
import type { AppointmentResponse } from './schema.js';

/**
 * A booking as the API shows it. A replayed request's comes from the appointment record (its
 * effect's stored result): only these fields of it are sent, its status in the lead's words
 * (docs/appointments.md#booking): `booked`, or `requested` when the event type needs confirmation (Cal.com's
 * `pending`), never said as booked.
 */
export function appointmentView(result: AppointmentResult): Static<typeof AppointmentResponse> {
  return {
    booking_uid: result.booking_uid,
    start: result.start,
    end: result.end,
    status: statusOfCalBooking(result.status),
  };
}
