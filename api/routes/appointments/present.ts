import type { Static } from '@sinclair/typebox';
import type { AppointmentResult } from '../../../core/domain/appointments/booking.js';
import type { AppointmentResponse } from './schema.js';

/**
 * A booking as the API shows it. A replayed request's comes from the appointment record (its
 * effect's stored result): only these fields of it are sent.
 */
export function appointmentView(result: AppointmentResult): Static<typeof AppointmentResponse> {
  return {
    booking_uid: result.booking_uid,
    start: result.start,
    end: result.end,
    status: result.status,
  };
}
