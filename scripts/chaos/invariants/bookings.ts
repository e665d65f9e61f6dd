import { reminderMessageId } from '../../../core/domain/bookings/reminder-mail.js';
import type { ReminderRecord } from '../../../core/domain/bookings/reminder-records.js';
import type { BookingModel } from '../ledger.js';
import { row, summary, timesBy, type Row } from './rows.js';
import type { CheckContext } from './context.js';

/** How long after a cancel was acknowledged a reminder due may still be sent (the cancel's job on its way). */
const CANCEL_GRACE_MS = 60_000;

/** The reminders a booking should hold, by field, from what the run sent and had acknowledged. */
function expectedReminders(
  model: BookingModel,
  offsets: number[],
  firmEmail: string,
): Array<{ offset: number; to: string; due: number; certain: boolean }> {
  const out: Array<{ offset: number; to: string; due: number; certain: boolean }> = [];
  const ack = model.createdAck!;
  for (const offset of offsets) {
    const due = model.startMs - offset * 60_000;
    if (due <= ack.sentAt) continue; // already past when it was sent: skipped
    // Past by the time it was acknowledged (the web's clock lies between): either way.
    const certain = due > ack.ackAt;
    for (const to of [model.attendee, firmEmail]) out.push({ offset, to, due, certain });
  }
  return out;
}

/** Bookings: every acknowledged booking holds exactly its reminders, each in the state its time and any cancel say. */
export async function bookingRows(ctx: CheckContext): Promise<Row[]> {
  const { cluster, ledger, firms, timing } = ctx;
  const rows: Row[] = [];
  const firm = firms.bookings.slug;
  const mails = timesBy(cluster.smtp.messages.map((m) => [m.header('message-id') ?? '', m.at]));
  const mailFrom = cluster.env.MAIL_FROM!;
  const now = Date.now();
  const acked = ledger.bookingEvents.filter((e) => e.status === 200);
  const workloadEvents = ledger.bookingEvents.filter((e) => !e.uid.startsWith('bk-probe-'));
  const notAcked = workloadEvents.filter((e) => e.status !== 200);
  rows.push(
    row(
      'booking events: every workload event acknowledged',
      workloadEvents.length,
      summary(
        workloadEvents.length,
        notAcked.map((e) => `${e.trigger} ${e.uid}: ${e.status}`),
      ),
      notAcked.length === 0,
    ),
  );
  const setBad: string[] = [];
  const stateBad: string[] = [];
  const cancelledSent: string[] = [];
  const sentTwice: string[] = [];
  let repeatedSends = 0;
  let reminders = 0;
  let sent = 0;
  let cancelled = 0;
  for (const model of ledger.bookings.values()) {
    if (model.createdAck === undefined) continue;
    const hash = await cluster.redis.hgetall(cluster.keys.bookingReminders(firm, model.uid));
    const stored = new Map<string, ReminderRecord>();
    for (const [field, value] of Object.entries(hash)) {
      if (field.startsWith('r|')) stored.set(field, JSON.parse(value) as ReminderRecord);
    }
    const expected = expectedReminders(model, timing.reminderOffsets, firms.bookings.notificationEmail);
    const fieldOf = (e: { offset: number; to: string }) => `r|${model.startMs}|${e.offset}|${e.to}`;
    const mustHave = expected.filter((e) => e.certain).map(fieldOf);
    const mayHave = new Set(expected.map(fieldOf));
    // A cancel (or reschedule away) applied before the creation leaves a tombstone and stores
    // nothing ("the cancel always wins"): a cancelled booking may hold fewer reminders.
    const missing = model.cancelAck === undefined ? mustHave.filter((f) => !stored.has(f)) : [];
    const extra = [...stored.keys()].filter((f) => !mayHave.has(f));
    if (missing.length > 0 || extra.length > 0) {
      setBad.push(`${model.uid}: ${missing.length} missing, ${extra.length} extra`);
    }
    for (const [field, r] of stored) {
      reminders++;
      const times = (mails.get(reminderMessageId(mailFrom, firm, model.uid, field)) ?? []).sort(
        (a, b) => a - b,
      );
      const mailed = times.length;
      // A repeat only when a worker died between SMTP's acceptance and the `sent` record
      // (docs/bookings.md#sending-once).
      const repeatsExplained = times
        .slice(1)
        .every((t, i) =>
          ledger.abruptEnds.some((k) => k >= times[i]! - 1000 && k <= times[i]! + 5000 && k < t),
        );
      if (r.status === 'sent') sent++;
      if (r.status === 'cancelled') cancelled++;
      if (r.status === 'cancelled' && mailed > 0) cancelledSent.push(`${model.uid} ${r.to}`);
      if (r.status === 'sent' && (mailed === 0 || !repeatsExplained))
        sentTwice.push(`${model.uid} ${r.to}: ${mailed} mails`);
      if (r.status === 'sent' && mailed > 1 && repeatsExplained) repeatedSends++;
      if (r.status !== 'sent' && r.status !== 'cancelled' && mailed > 0)
        cancelledSent.push(`${model.uid} ${r.to}: ${r.status} but mailed`);
      let want: string[];
      if (model.cancelAck !== undefined) {
        want = r.due_at > model.cancelAck + CANCEL_GRACE_MS ? ['cancelled'] : ['cancelled', 'sent'];
      } else {
        want =
          r.due_at < now - timing.reminderGraceMs
            ? ['sent']
            : r.due_at > now
              ? ['scheduled']
              : ['scheduled', 'sending', 'sent'];
      }
      if (!want.includes(r.status)) {
        stateBad.push(
          `${model.uid} ${r.to}: ${r.status}, want ${want.join('|')}${model.cancelledBy ? ` (${model.cancelledBy})` : ''}`,
        );
      }
    }
  }
  const bookings = [...ledger.bookings.values()].filter((m) => m.createdAck !== undefined).length;
  rows.push(
    row(
      'every acknowledged booking has exactly its reminders',
      `${bookings} bookings (${acked.length} events)`,
      summary(bookings, setBad),
      setBad.length === 0,
    ),
  );
  rows.push(
    row(
      'reminder states: due → sent, later → scheduled, cancelled stays cancelled',
      `${reminders} reminders`,
      stateBad.length === 0
        ? `${sent} sent, ${cancelled} cancelled, ${reminders - sent - cancelled} other`
        : summary(reminders, stateBad),
      stateBad.length === 0,
    ),
  );
  rows.push(
    row(
      'no cancelled reminder sent',
      0,
      cancelledSent.length === 0 ? 0 : summary(cancelledSent.length, cancelledSent),
      cancelledSent.length === 0,
    ),
  );
  rows.push(
    row(
      'every sent reminder mailed exactly once (a repeat only after a SIGKILL)',
      `${sent} × 1`,
      sentTwice.length === 0
        ? `${sent}${repeatedSends > 0 ? ` + ${repeatedSends} repeated after a SIGKILL` : ''}`
        : summary(sent, sentTwice),
      sentTwice.length === 0,
    ),
  );
  return rows;
}
