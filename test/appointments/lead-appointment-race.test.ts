// A booking that moves while its lead is being made (docs/appointments.md#the-lead): an agent
// booked during the call, so the appointment waits under the lead's id, and the call's lead effect
// copies it onto the lead when it makes the lead. A booking event (Cal.com cancelling, moving or
// confirming it) applied between the lead's read of the appointment and its copy must not be
// undone by that copy: the lead shows the appointment as it stands, not as it was read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appointmentOfLead,
  attachAppointment,
  followBookingEvent,
} from '../../core/domain/appointments/lead-appointment.js';
import { ensureSubjectLead, findLead, subjectLeadId } from '../../core/domain/leads/leads.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { readThen, writesMeet } from '../helpers/store-timing.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

const START = '2026-12-03T15:00:00.000Z';

async function bookedBeforeTheLead(callId: string) {
  const firm = await createFirm(stack);
  const leadId = subjectLeadId('call', callId);
  const uid = `bk_${callId}`;
  // The agent's booking during the call: kept under the lead's id, the lead not made yet.
  await attachAppointment(stack.services, firm.slug, leadId, {
    booking_uid: uid,
    start: START,
    status: 'booked',
  });
  expect(await findLead(stack.services.mongo.db, leadId)).toBeNull();
  return { firm, leadId, uid };
}

/** Cal.com's BOOKING_CANCELLED of booking `uid`, applied: the leads it moved. */
const cancelled = (firm: string, uid: string) =>
  followBookingEvent(stack.services, {
    firm,
    trigger: 'BOOKING_CANCELLED',
    uid,
    start_at: Date.parse(START),
    event_at: Date.now(),
  });

/** The call's lead made over `db` (as the lead effect makes it). */
const makeLead = (db: typeof stack.services.mongo.db, firm: string, callId: string) =>
  ensureSubjectLead(
    db,
    { source: 'call', id: callId, firm },
    { first_name: 'Rae', phone: '+14155550142', email: `${callId}@example.com` },
  );

describe('a booking event while the lead is being made', () => {
  it('a cancellation applied between the lead’s read of the appointment and its copy: the lead shows cancelled', async () => {
    const { firm, leadId, uid } = await bookedBeforeTheLead('call_race_cancel');
    const db = stack.services.mongo.db;
    // Cal.com's BOOKING_CANCELLED is applied right after the new lead read the appointment (booked).
    const racing = readThen(db, COLLECTIONS.leadAppointments, leadId, async () => {
      expect(await cancelled(firm.slug, uid)).toEqual([leadId]);
    });
    const made = await makeLead(racing, firm.slug, 'call_race_cancel');
    expect(made.appointment).toEqual({ booking_uid: uid, start: START, status: 'cancelled' });
    expect((await findLead(db, leadId))?.appointment).toEqual({
      booking_uid: uid,
      start: START,
      status: 'cancelled',
    });
    expect(await appointmentOfLead(db, leadId)).toEqual({
      booking_uid: uid,
      start: START,
      status: 'cancelled',
    });
    // Over the API too.
    expect((await firm.client.get(`/api/leads/${leadId}`)).body.appointment).toMatchObject({
      status: 'cancelled',
    });
  });

  it('with nothing in between, the lead shows the booking as it was made; and an event after it moves the lead', async () => {
    const { firm, leadId, uid } = await bookedBeforeTheLead('call_race_none');
    const db = stack.services.mongo.db;
    const made = await makeLead(db, firm.slug, 'call_race_none');
    expect(made.appointment).toEqual({ booking_uid: uid, start: START, status: 'booked' });
    expect((await findLead(db, leadId))?.appointment).toEqual({
      booking_uid: uid,
      start: START,
      status: 'booked',
    });
    expect(await cancelled(firm.slug, uid)).toEqual([leadId]);
    expect((await findLead(db, leadId))?.appointment).toMatchObject({ status: 'cancelled' });
  });
});

describe('our answer of a move and Cal.com’s event of it, written at the same moment', () => {
  it('both succeed, and each lead shows the booking it moved to', async () => {
    // The agent's move of a booking: Cal.com sends BOOKING_RESCHEDULED as it answers, so the
    // event's job and the request record the new booking's keys at once (upsert.ts).
    const firm = await createFirm(stack);
    const moves = Array.from({ length: 10 }, (_, i) => ({
      leadId: subjectLeadId('call', `call_move_${i}`),
      from: `bk_from_${i}`,
      to: `bk_to_${i}`,
      email: `move${i}@example.com`,
    }));
    for (const m of moves) {
      await attachAppointment(
        stack.services,
        firm.slug,
        m.leadId,
        { booking_uid: m.from, start: START, status: 'booked' },
        m.email,
        null,
      );
    }
    const moved = '2026-12-04T15:00:00.000Z';
    // Both writers' first write of each new booking key goes to the store at the same moment.
    const meeting = {
      ...stack.services,
      mongo: {
        ...stack.services.mongo,
        db: writesMeet(stack.services.mongo.db, COLLECTIONS.bookingLeads, 'replaceOne'),
      },
    };
    const results = await Promise.allSettled(
      moves.flatMap((m) => [
        attachAppointment(
          meeting,
          firm.slug,
          m.leadId,
          { booking_uid: m.to, start: moved, status: 'rescheduled' },
          m.email,
          null,
        ),
        followBookingEvent(meeting, {
          firm: firm.slug,
          trigger: 'BOOKING_RESCHEDULED',
          uid: m.to,
          reschedule_uid: m.from,
          start_at: Date.parse(moved),
          event_at: Date.now(),
        }),
      ]),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
    for (const m of moves) {
      expect(await appointmentOfLead(stack.services.mongo.db, m.leadId)).toEqual({
        booking_uid: m.to,
        start: moved,
        status: 'rescheduled',
      });
    }
  });
});
