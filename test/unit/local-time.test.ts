// localTime (core/platform/time-zone.ts) keeps each zone's offset per quarter hour of UTC instead
// of asking Intl every time. Checked here against Intl itself, minute by minute (and at the
// first and last millisecond of each minute) around every offset change of 2026–2027 in zones
// whose offsets or changes are not whole hours: Lord Howe (a half-hour change), Chatham (+12:45
// / +13:45), St John's (−3:30), Adelaide (+9:30), and New York, London, Santiago; plus a zone
// without changes (Kathmandu, +5:45).
import { describe, expect, it } from 'vitest';
import { localTime } from '../../core/platform/time-zone.js';

const ZONES = [
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'America/St_Johns',
  'Australia/Adelaide',
  'America/New_York',
  'Europe/London',
  'America/Santiago',
  'Asia/Kathmandu',
];

function intlParts(timeZone: string) {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  return (ms: number) => {
    const p: Record<string, number> = {};
    for (const x of format.formatToParts(ms)) if (x.type !== 'literal') p[x.type] = Number(x.value);
    return {
      year: p.year,
      month: p.month,
      day: p.day,
      hour: p.hour! % 24,
      minute: p.minute,
      second: p.second,
    };
  };
}

describe('localTime', () => {
  it('agrees with Intl around every offset change of 2026–2027, to the millisecond', () => {
    const start = Date.UTC(2026, 0, 1);
    const end = Date.UTC(2028, 0, 1);
    let changes = 0;
    for (const zone of ZONES) {
      const parts = intlParts(zone);
      const offset = (ms: number) => {
        const p = parts(ms);
        return Date.UTC(p.year!, p.month! - 1, p.day, p.hour, p.minute, p.second) - ms;
      };
      let before = offset(start);
      for (let hour = start + 3600_000; hour < end; hour += 3600_000) {
        const now = offset(hour);
        if (now === before) continue;
        changes += 1;
        before = now;
        for (let t = hour - 2 * 3600_000; t <= hour + 3600_000; t += 60_000) {
          for (const at of [t, t + 1, t + 59_999])
            expect(localTime(at, zone), `${zone} ${at}`).toEqual(parts(at));
        }
      }
      // And at ordinary moments across the two years.
      for (let t = start; t < end; t += 7 * 3600_000 + 13 * 60_000 + 17_001) {
        expect(localTime(t, zone), `${zone} ${t}`).toEqual(parts(t));
      }
    }
    // Two changes a year in each zone with daylight saving (all but Kathmandu).
    expect(changes).toBe(7 * 2 * 2);
    // About 100k comparisons with Intl: 1 s alone, several on a machine busy with the suite.
  });
});
