// The time a mail or Slack post shows, in the firm's zone: one formatter kept per zone, each
// zone's own (a formatter kept for one zone must never answer for another).
import { describe, expect, it } from 'vitest';
import { readableTime as shown } from '../../core/platform/time-zone.js';

/** As shown, with the narrow no-break space some ICU versions put before AM/PM read as a space. */
const readableTime = (when: Date, zone: string): string => shown(when, zone).replace(/\s/gu, ' ');

const at = new Date('2026-11-28T02:05:00Z');

describe('readableTime', () => {
  it('shows the instant as a person reads it in each zone, however often and in whatever order asked', () => {
    for (let round = 0; round < 3; round++) {
      expect(readableTime(at, 'America/New_York')).toBe('Nov 27, 2026, 9:05 PM EST');
      expect(readableTime(at, 'America/Chicago')).toBe('Nov 27, 2026, 8:05 PM CST');
      expect(readableTime(at, 'Europe/London')).toBe('Nov 28, 2026, 2:05 AM GMT');
      expect(readableTime(at, 'Asia/Kathmandu')).toBe('Nov 28, 2026, 7:50 AM GMT+5:45');
    }
    expect(readableTime(new Date('2026-07-01T16:30:00Z'), 'America/New_York')).toBe(
      'Jul 1, 2026, 12:30 PM EDT',
    );
  });

  it('refuses a zone Intl does not know, and still answers for the known ones after', () => {
    expect(() => readableTime(at, 'Mars/Olympus_Mons')).toThrow(RangeError);
    expect(readableTime(at, 'America/Chicago')).toBe('Nov 27, 2026, 8:05 PM CST');
  });
});
