// The calling window read with Intl in a time zone: ISO weekdays (1 = Monday … 7 = Sunday),
// windows over midnight, whole-day windows, daylight-saving changes, and the next opening.
import { describe, expect, it } from 'vitest';
import { insideWindow, nextCallTime } from '../../core/domain/pacing/calling-window.js';
import { dateIn, localTime, startOfDayIn, zonedTimeToUtc } from '../../core/platform/time-zone.js';

const WEEKDAYS = { start: '09:00', end: '20:00', days: [1, 2, 3, 4, 5] };
const at = (iso: string) => Date.parse(iso);

describe('calling windows', () => {
  it('reads the wall clock of the zone', () => {
    // 2025-01-06 is a Monday; 14:30 UTC is 09:30 in New York (EST, UTC-5).
    expect(localTime(at('2025-01-06T14:30:00Z'), 'America/New_York')).toMatchObject({
      year: 2025,
      month: 1,
      day: 6,
      hour: 9,
      minute: 30,
    });
    expect(localTime(at('2025-01-06T23:30:00Z'), 'Asia/Tokyo')).toMatchObject({ day: 7, hour: 8 });
  });

  it('is open from start (included) to end (excluded) on the listed ISO weekdays, in the given zone', () => {
    expect(insideWindow(WEEKDAYS, 'America/New_York', at('2025-01-06T14:00:00Z'))).toBe(true); // Mon 09:00
    expect(insideWindow(WEEKDAYS, 'America/New_York', at('2025-01-06T13:59:00Z'))).toBe(false); // Mon 08:59
    expect(insideWindow(WEEKDAYS, 'America/New_York', at('2025-01-07T00:59:00Z'))).toBe(true); // Mon 19:59
    expect(insideWindow(WEEKDAYS, 'America/New_York', at('2025-01-07T01:00:00Z'))).toBe(false); // Mon 20:00
    // Saturday 10:00 in New York: not a listed day. Sunday is 7.
    expect(insideWindow(WEEKDAYS, 'America/New_York', at('2025-01-11T15:00:00Z'))).toBe(false);
    expect(insideWindow({ ...WEEKDAYS, days: [7] }, 'America/New_York', at('2025-01-12T15:00:00Z'))).toBe(
      true,
    );
    // The same instant is inside for New York and outside for Los Angeles (06:00 there).
    expect(insideWindow(WEEKDAYS, 'America/Los_Angeles', at('2025-01-06T14:00:00Z'))).toBe(false);
  });

  it('handles a window over midnight (its day is the day it opens) and a whole-day window', () => {
    const night = { start: '22:00', end: '06:00', days: [5] }; // Friday night
    expect(insideWindow(night, 'UTC', at('2025-01-10T23:00:00Z'))).toBe(true); // Fri 23:00
    expect(insideWindow(night, 'UTC', at('2025-01-11T05:59:00Z'))).toBe(true); // Sat 05:59
    expect(insideWindow(night, 'UTC', at('2025-01-11T06:00:00Z'))).toBe(false);
    expect(insideWindow(night, 'UTC', at('2025-01-10T05:00:00Z'))).toBe(false); // Fri 05:00: Thursday's night
    // Sunday's night (7) runs into Monday (1): the week wraps.
    const sundayNight = { start: '22:00', end: '06:00', days: [7] };
    expect(insideWindow(sundayNight, 'UTC', at('2025-01-13T05:00:00Z'))).toBe(true); // Mon 05:00
    expect(insideWindow(sundayNight, 'UTC', at('2025-01-14T05:00:00Z'))).toBe(false); // Tue 05:00
    expect(insideWindow({ start: '00:00', end: '00:00', days: [1] }, 'UTC', at('2025-01-06T23:59:00Z'))).toBe(
      true,
    );
  });

  it('gives the next opening: the same day, the next listed day, across a weekend', () => {
    // Monday 07:00 New York → 09:00 the same day.
    expect(nextCallTime(WEEKDAYS, 'America/New_York', at('2025-01-06T12:00:00Z'))).toBe(
      at('2025-01-06T14:00:00Z'),
    );
    // Inside: now.
    expect(nextCallTime(WEEKDAYS, 'America/New_York', at('2025-01-06T15:00:00Z'))).toBe(
      at('2025-01-06T15:00:00Z'),
    );
    // Friday 21:00 New York → Monday 09:00.
    expect(nextCallTime(WEEKDAYS, 'America/New_York', at('2025-01-11T02:00:00Z'))).toBe(
      at('2025-01-13T14:00:00Z'),
    );
  });

  it('follows daylight-saving time', () => {
    // New York moved to EDT (UTC-4) on 2025-03-09; Monday 2025-03-10 09:00 EDT is 13:00 UTC.
    expect(nextCallTime(WEEKDAYS, 'America/New_York', at('2025-03-08T12:00:00Z'))).toBe(
      at('2025-03-10T13:00:00Z'),
    );
    expect(zonedTimeToUtc({ year: 2025, month: 7, day: 1 }, 9 * 60, 'Europe/London')).toBe(
      at('2025-07-01T08:00:00Z'),
    );
    // 02:30 does not exist in New York on 2025-03-09: the window is open from the first moment after.
    const skipped = zonedTimeToUtc({ year: 2025, month: 3, day: 9 }, 2 * 60 + 30, 'America/New_York');
    expect(insideWindow({ start: '02:30', end: '05:00', days: [7] }, 'America/New_York', skipped)).toBe(true);
  });

  it('gives the next opening of a window over midnight, of a Sunday-only window, and of a whole day', () => {
    // Saturday 07:00: Friday's night window (22:00–06:00) has closed; the next is next Friday 22:00.
    expect(nextCallTime({ start: '22:00', end: '06:00', days: [5] }, 'UTC', at('2025-01-11T07:00:00Z'))).toBe(
      at('2025-01-17T22:00:00Z'),
    );
    // Sunday 17:00, just closed: the next Sunday (7 is Sunday, and the week wraps to it).
    expect(nextCallTime({ start: '09:00', end: '17:00', days: [7] }, 'UTC', at('2025-01-12T17:00:00Z'))).toBe(
      at('2025-01-19T09:00:00Z'),
    );
    // A whole Wednesday in India (UTC+05:30) opens at its midnight, 18:30 UTC on Tuesday.
    expect(
      nextCallTime({ start: '00:00', end: '00:00', days: [3] }, 'Asia/Kolkata', at('2025-01-06T12:00:00Z')),
    ).toBe(at('2025-01-07T18:30:00Z'));
  });

  it('is never open, and has no next opening, with no days', () => {
    const none = { start: '09:00', end: '17:00', days: [] };
    expect(insideWindow(none, 'UTC', at('2025-01-06T12:00:00Z'))).toBe(false);
    expect(nextCallTime(none, 'UTC', at('2025-01-06T12:00:00Z'))).toBeNull();
  });

  it('refuses a time zone Intl does not know', () => {
    expect(() => insideWindow(WEEKDAYS, 'Mars/Base', 0)).toThrow(RangeError);
  });
});

describe('days in a time zone', () => {
  it('starts a day at its local midnight, east and west of UTC and across a daylight-saving change', () => {
    expect(new Date(startOfDayIn('2026-12-01', 'America/Los_Angeles')).toISOString()).toBe(
      '2026-12-01T08:00:00.000Z',
    );
    expect(new Date(startOfDayIn('2026-12-01', 'Pacific/Kiritimati')).toISOString()).toBe(
      '2026-11-30T10:00:00.000Z',
    );
    expect(new Date(startOfDayIn('2026-03-08', 'America/New_York')).toISOString()).toBe(
      '2026-03-08T05:00:00.000Z',
    );
    expect(new Date(startOfDayIn('2026-03-09', 'America/New_York')).toISOString()).toBe(
      '2026-03-09T04:00:00.000Z',
    );
  });

  it('starts a day with no local midnight at its first instant', () => {
    // Chile moves its clocks from 00:00 to 01:00 on 2026-09-06: that day starts at 01:00 local (-03).
    expect(new Date(startOfDayIn('2026-09-06', 'America/Santiago')).toISOString()).toBe(
      '2026-09-06T04:00:00.000Z',
    );
    expect(dateIn(startOfDayIn('2026-09-06', 'America/Santiago') - 1, 'America/Santiago')).toBe('2026-09-05');
  });
});
