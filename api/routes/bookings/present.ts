import type { Static } from '@sinclair/typebox';
import type { ReminderRecord } from '../../../core/domain/bookings/reminder-records.js';
import type { ReminderList } from './schema.js';

/** A reminder as GET /api/v2/{firm}/reminders shows it (not its lease, attempts or mail details). */
export function reminderView(reminder: ReminderRecord): Static<typeof ReminderList>[number] {
  return {
    booking_uid: reminder.booking_uid,
    due_at: new Date(reminder.due_at).toISOString(),
    channel: reminder.channel,
    to: reminder.to,
    // A send in progress is not done yet: still scheduled to the reader.
    status: reminder.status === 'sending' ? 'scheduled' : reminder.status,
  };
}
