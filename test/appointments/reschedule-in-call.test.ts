// "Make it Thursday instead": a second book_appointment in the same call with another time moves
// the call's booking (Cal.com's POST /v2/bookings/{uid}/reschedule) instead of answering the first
// one (docs/appointments.md#agent-tools). Retell repeats a tool call only when the request failed,
// so each (call, requested time) is done once however often it is repeated.
import { describe, expect, it } from 'vitest';
import { dailySlots } from '../fakes/calcom-server.js';
import { callTool, useCalcomFirm } from './support.js';

const API_KEY = 'cal_live_rebook_0123456789';
const EVENT_TYPE = 8181;
const VOICE_SECRET = 'voice_secret_rebook_0123';
const DAY = 24 * 3600_000;

const slots = dailySlots(Date.now() + DAY, 4, 4);
const booking = useCalcomFirm({
  apiKey: API_KEY,
  eventTypeId: EVENT_TYPE,
  slots,
  voiceSecret: VOICE_SECRET,
});

const book = (start: number, callId: string) =>
  callTool(
    booking.stack,
    { slug: booking.firm.slug, voiceSecret: VOICE_SECRET },
    'book_appointment',
    { start: new Date(start).toISOString(), name: 'Rae Caller', email: `${callId}@example.com` },
    { callId, direction: 'inbound', fromNumber: '+14155550100', toNumber: '+14155552222' },
  );
const reschedules = () => booking.cal.requests.filter((r) => r.path.endsWith('/reschedule'));

describe('a second booking in the same call', () => {
  it('with another time moves the call’s booking there; a repeat of either request changes nothing', async () => {
    const wednesday = await book(slots[1]!, 'call_rebook_1');
    expect(wednesday.status).toBe(200);
    expect(wednesday.body.booked).toBe(true);
    const first = wednesday.body.booking_uid as string;

    const thursday = await book(slots[6]!, 'call_rebook_1');
    expect(thursday.status).toBe(200);
    expect(thursday.body).toMatchObject({ booked: true, start: new Date(slots[6]!).toISOString() });
    expect(thursday.body.message).toMatch(/^Moved: /);
    const moved = thursday.body.booking_uid as string;
    expect(moved).not.toBe(first);
    expect(reschedules().map((r) => r.path)).toEqual([`/v2/bookings/${first}/reschedule`]);
    expect(booking.cal.bookings.find((b) => b.uid === first)).toMatchObject({
      status: 'cancelled',
      rescheduledToUid: moved,
    });
    expect(booking.cal.bookings.find((b) => b.uid === moved)).toMatchObject({
      status: 'accepted',
      rescheduledFromUid: first,
    });

    // Retell repeats a request it got no answer to: the same (call, time) is done once.
    const again = await book(slots[6]!, 'call_rebook_1');
    expect(again.body.booking_uid).toBe(moved);
    const [x, y] = await Promise.all([book(slots[6]!, 'call_rebook_1'), book(slots[6]!, 'call_rebook_1')]);
    expect([x.body.booking_uid, y.body.booking_uid]).toEqual([moved, moved]);
    expect(reschedules()).toHaveLength(1);
    expect(booking.cal.bookings.filter((b) => b.attendee.email === 'call_rebook_1@example.com')).toHaveLength(
      2,
    );
    expect(
      booking.cal.bookings.filter(
        (b) => b.status === 'accepted' && b.attendee.email === 'call_rebook_1@example.com',
      ),
    ).toHaveLength(1);
  });

  it('another call books its own appointment, not a move of this one', async () => {
    const before = reschedules().length;
    const a = await book(slots[10]!, 'call_rebook_2');
    const b = await book(slots[11]!, 'call_rebook_3');
    expect(a.body.booked).toBe(true);
    expect(b.body.booked).toBe(true);
    expect(a.body.booking_uid).not.toBe(b.body.booking_uid);
    expect(reschedules()).toHaveLength(before);
  });
});
