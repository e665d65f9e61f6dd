// A reminder job's id, and what the worker says of a reminder, name no recipient: the id is read by
// traces (bullmq.job.id) and by the "job failed" log line, so it carries an opaque digest of the
// reminder instead of its field (whose last part is the recipient's email).
import { describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/table.js';
import { reminderField } from '../../core/domain/bookings/reminder-records.js';
import { ReminderBusyError } from '../../core/domain/bookings/reminders.js';

const START = Date.UTC(2026, 11, 1, 15, 0);
const job = (to: string) => ({
  firm: 'firm-a',
  booking_uid: 'bk-1',
  reminder: reminderField(START, 60, to),
  due_at: START - 3_600_000,
});

describe('reminder job ids', () => {
  it('carry no email, yet stay one id per reminder', () => {
    const id = JOBS.sendReminder.id!(job('ann.lee@example.com'));
    expect(id).not.toMatch(/ann|example|@/i);
    expect(JOBS.sendReminder.id!(job('ann.lee@example.com'))).toBe(id);
    expect(JOBS.sendReminder.id!(job('bob@example.com'))).not.toBe(id);
    expect(id.startsWith('reminder|firm-a|bk-1|')).toBe(true);
  });

  it('a busy reminder’s error (logged when its job fails) names no email', () => {
    const err = new ReminderBusyError(reminderField(START, 60, 'ann.lee@example.com'), START);
    expect(err.message).not.toMatch(/ann|@/i);
  });
});
