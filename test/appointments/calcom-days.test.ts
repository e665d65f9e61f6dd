// Availability for a day in the caller's time zone (docs/appointments.md#availability) against a
// Cal.com that reads GET /v2/slots as Cal.com does: `start`/`end` in UTC, `timeZone` only
// formatting the answer (test/fakes/calcom-server.ts). Asking for Dec 1 in Los Angeles (UTC−8),
// Sydney (UTC+11) and Kiritimati (UTC+14) must give exactly Dec 1's slots there, and the agent's
// spoken list must name Dec 1's weekday.
import { describe, expect, it } from 'vitest';
import { isoInZone } from '../fakes/calcom-server.js';
import { callTool, useCalcomFirm } from './support.js';

const API_KEY = 'cal_live_days_key_0123456789';
const EVENT_TYPE = 5151;
const VOICE_SECRET = 'voice_secret_for_days_0123';
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const ZONES = ['America/Los_Angeles', 'Australia/Sydney', 'Pacific/Kiritimati'];

// The next Dec 1 at least two days ahead (every zone's Dec 1 is then still to come).
const year = new Date(Date.now() + 2 * DAY).getUTCFullYear();
const dec1 = `${Date.parse(`${year}-12-01T00:00:00Z`) - 2 * DAY > Date.now() ? year : year + 1}-12-01`;
const weekday = new Intl.DateTimeFormat('en-US', { weekday: 'long', timeZone: 'UTC' }).format(
  new Date(`${dec1}T12:00:00Z`),
);
// A slot every hour from two days before Dec 1 (UTC) to two days after.
const dec1Utc = Date.parse(`${dec1}T00:00:00Z`);
const slots = Array.from({ length: 5 * 24 }, (_, i) => dec1Utc - 2 * DAY + i * HOUR);

const booking = useCalcomFirm({
  apiKey: API_KEY,
  eventTypeId: EVENT_TYPE,
  slots,
  voiceSecret: VOICE_SECRET,
});

const inZone = (ms: number, timeZone: string) => isoInZone(ms, timeZone).slice(0, 10);

describe("a day's availability in the caller's time zone", () => {
  for (const timeZone of ZONES) {
    it(`Dec 1 in ${timeZone}: exactly that day's slots there, asked of Cal.com as the UTC instants that cover it`, async () => {
      const res = await booking.firm.client.get(
        `/api/appointments/availability?${new URLSearchParams({ firmSlug: booking.firm.slug, start: dec1, end: dec1, timeZone })}`,
      );
      expect(res.status).toBe(200);
      const starts = (res.body.slots as Array<{ start: string }>).map((s) => s.start);
      const expected = slots.filter((ms) => inZone(ms, timeZone) === dec1);
      expect(expected).toHaveLength(24);
      expect(starts.map(Date.parse)).toEqual(expected);
      for (const s of starts) expect(s.slice(0, 10)).toBe(dec1);
      const asked = booking.cal.requests.filter((r) => r.path === '/v2/slots').at(-1)!;
      // The first and last instants of Dec 1 there, in UTC as Cal.com reads them.
      expect(Date.parse(asked.query.get('start')!)).toBe(expected[0]!);
      expect(Date.parse(asked.query.get('end')!)).toBeLessThan(expected[23]! + HOUR);
      expect(Date.parse(asked.query.get('end')!)).toBeGreaterThanOrEqual(expected[23]!);
      expect(asked.query.get('timeZone')).toBe(timeZone);
    });
  }

  it("without timeZone, the days are the firm's (settings.timezone)", async () => {
    const timeZone = 'Australia/Sydney';
    const patched = await booking.firm.client.patch(`/api/firms/${booking.firm.slug}`, {
      settings: { timezone: timeZone },
    });
    expect(patched.status).toBe(200);
    try {
      const res = await booking.firm.client.get(
        `/api/appointments/availability?${new URLSearchParams({ firmSlug: booking.firm.slug, start: dec1, end: dec1 })}`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const starts = (res.body.slots as Array<{ start: string }>).map((s) => Date.parse(s.start));
      expect(starts).toEqual(slots.filter((ms) => inZone(ms, timeZone) === dec1));
      for (const s of res.body.slots as Array<{ start: string }>) expect(s.start).toMatch(/\+1[01]:00$/);
    } finally {
      await booking.firm.client.patch(`/api/firms/${booking.firm.slug}`, { settings: { timezone: null } });
    }
  });

  for (const timeZone of ZONES) {
    it(`the agent asked for Dec 1 in ${timeZone} offers Dec 1's times and names its weekday`, async () => {
      const res = await callTool(
        booking.stack,
        { slug: booking.firm.slug, voiceSecret: VOICE_SECRET },
        'check_availability',
        { date: dec1 },
        {
          callId: `call_days_${timeZone.replace(/\W/g, '_')}`,
          direction: 'inbound',
          fromNumber: '+14155550100',
          toNumber: '+14155552222',
          dynamicVariables: { time_zone: timeZone },
        },
      );
      expect(res.status).toBe(200);
      const offered = res.body.slots as Array<{ start: string; spoken: string }>;
      expect(offered).toHaveLength(5);
      const first = slots.filter((ms) => inZone(ms, timeZone) === dec1).slice(0, 5);
      expect(offered.map((s) => Date.parse(s.start))).toEqual(first);
      for (const s of offered) expect(s.spoken).toMatch(new RegExp(`^${weekday}, December 1 at `));
      expect(res.body.message).toContain(`${weekday}, December 1 at 12:00 AM`);
    });
  }
});
