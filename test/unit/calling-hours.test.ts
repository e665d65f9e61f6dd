// Calling hours in the callee's time, on a frozen clock (every instant is given, nothing waits):
// numbers in one and in several possible zones (libphonenumber's data), Arizona without daylight
// saving, zones with non-hour offsets, across the US and EU daylight-saving changes; the state
// rules table with the states' legal holidays (and their observed days); the firm's window and the
// lead's own zone narrowing the hours. Each expected
// instant is worked out by hand in the comments, and checked again by a minute-by-minute scan
// with an oracle that reads the wall clock with Intl on its own.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getCountries, getCountryCallingCode } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import {
  judgeHours,
  placeOfNumber,
  STATE_RULES_VERSION,
  zonesOfCallingCode,
  type HoursVerdict,
} from '../../core/domain/compliance/calling-hours.js';
import {
  easterSunday,
  holidayDate,
  holidaysOfYear,
  type HolidayRules,
} from '../../core/domain/compliance/holidays.js';
import { insideWindow, type CallingWindow } from '../../core/domain/pacing/calling-window.js';

const HOURS = { start: '08:00', end: '21:00' };
const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string =>
  ms === null ? 'none' : new Date(ms).toISOString().slice(0, 16) + 'Z';
const RULES_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../core/domain/compliance/state-rules.json',
);

const NUMBERS = {
  newYork: '+12125550100', // 212: America/New_York
  northDakota: '+17015550100', // 701: America/Denver & America/North_Dakota/Center
  newfoundland: '+17095550100', // 709: America/St_Johns (UTC-3:30) & America/Puerto_Rico (UTC-4, no DST)
  arizona: '+16025550100', // 602: America/Phoenix (no DST)
  florida: '+13055550100', // 305: America/New_York, US-FL
  utah: '+18015550100', // 801: America/Denver, US-UT
  louisiana: '+15045550100', // 504: America/Chicago, US-LA
  rhodeIsland: '+14015550100', // 401: America/New_York, US-RI
  india: '+919876543210', // Asia/Calcutta (UTC+5:30)
  nepal: '+97714123456', // Asia/Katmandu (UTC+5:45)
  london: '+442071234567', // Europe/London
  unknownNanp: '+15555550100', // 555 is no area code: every NANP zone
};

// ---------------------------------------------------------------------------------------------
// The oracle: the wall clock read with Intl directly, the rules written out by hand.

const clocks = new Map<string, Intl.DateTimeFormat>();
function wallClock(ms: number, zone: string): { minute: number; weekday: string; date: string } {
  let f = clocks.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'short',
      hour: 'numeric',
      minute: 'numeric',
      hourCycle: 'h23',
    });
    clocks.set(zone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(ms).map((p) => [p.type, p.value]));
  return {
    minute: (Number(parts.hour) % 24) * 60 + Number(parts.minute),
    weekday: parts.weekday!,
    date: `${parts.year}-${parts.month}-${parts.day}`,
  };
}

interface Case {
  name: string;
  phone: string;
  atIso: string;
  leadTimeZone?: string;
  firmWindow?: CallingWindow;
  firmTimeZone?: string;
  stateRules?: boolean;
  hours?: { start: string; end: string };
  /** The oracle's hours for a zone's local weekday and date: [start, end) in minutes, or null (closed). */
  oracleHours?: (weekday: string, date: string) => [number, number] | null;
  expectAllowed: boolean;
  expectNext: string | null;
}

const DEFAULT_ORACLE = (): [number, number] => [8 * 60, 21 * 60];

function oracleAllows(c: Case, zones: string[], ms: number): boolean {
  const hoursOf = c.oracleHours ?? DEFAULT_ORACLE;
  for (const zone of zones) {
    const { minute, weekday, date } = wallClock(ms, zone);
    const h = hoursOf(weekday, date);
    if (h === null || minute < h[0] || minute >= h[1]) return false;
  }
  return c.firmWindow === undefined || insideWindow(c.firmWindow, c.firmTimeZone ?? 'America/New_York', ms);
}

function judge(c: Case): HoursVerdict {
  return judgeHours({
    phone: c.phone,
    leadTimeZone: c.leadTimeZone ?? null,
    firmTimeZone: c.firmTimeZone ?? 'America/New_York',
    firmWindow: c.firmWindow ?? null,
    atMs: at(c.atIso),
    hours: c.hours ?? HOURS,
    stateRules: c.stateRules ?? true,
  });
}

/** Every minute from atMs up to the verdict's next opening is closed by the oracle, and the opening is open. */
function checkAgainstOracle(c: Case, v: HoursVerdict): void {
  const zones = v.zones.map((z) => z.zone);
  const start = at(c.atIso);
  expect(v.allowed, `${c.name}: allowed`).toBe(oracleAllows(c, zones, start));
  if (v.nextAllowedMs === null) return;
  expect(oracleAllows(c, zones, v.nextAllowedMs), `${c.name}: open at ${iso(v.nextAllowedMs)}`).toBe(true);
  for (let ms = Math.ceil((start + 1) / 60_000) * 60_000; ms < v.nextAllowedMs; ms += 60_000) {
    if (oracleAllows(c, zones, ms))
      throw new Error(`${c.name}: open already at ${iso(ms)}, before ${iso(v.nextAllowedMs)}`);
  }
}

const FLORIDA_ORACLE = (): [number, number] => [8 * 60, 20 * 60];
/** Canada: 09:30-20:00 on weekdays, 10:30-17:00 on Saturdays, 12:00-17:00 on Sundays. */
const CANADA_ORACLE = (weekday: string): [number, number] =>
  weekday === 'Sat'
    ? [10 * 60 + 30, 17 * 60]
    : weekday === 'Sun'
      ? [12 * 60, 17 * 60]
      : [9 * 60 + 30, 20 * 60];
const NO_SUNDAY = (weekday: string): [number, number] | null =>
  weekday === 'Sun' ? null : [8 * 60, 21 * 60];

// The states' legal holidays written out by hand from the statutes (not from the rules file), each
// date with its observed day (Saturday → Friday, Sunday → Monday unless the statute says otherwise).
// Utah (Utah Code § 63G-1-301): 2026 — Easter April 5; Juneteenth (Fri) also the Monday before;
// July 4 (Sat) also Friday July 3. 2027 — Easter March 28; Juneteenth (Sat) also the Monday after;
// July 4 (Sun) also Monday July 5; Pioneer Day (Sat) also Friday July 23; Election Day from 2027;
// Christmas (Sat) also Friday December 24; New Year's Day 2028 (Sat) on Friday December 31.
const UTAH_HOLIDAYS = new Set([
  ...['01-01', '01-19', '02-16', '04-03', '05-25', '06-15', '06-19', '07-03', '07-04', '07-24'].map(
    (d) => `2026-${d}`,
  ),
  ...['09-07', '10-12', '11-11', '11-26', '12-25'].map((d) => `2026-${d}`),
  ...['01-01', '01-18', '02-15', '03-26', '05-31', '06-19', '06-21', '07-04', '07-05', '07-23', '07-24'].map(
    (d) => `2027-${d}`,
  ),
  ...['09-06', '10-11', '11-02', '11-11', '11-25', '12-24', '12-25', '12-31'].map((d) => `2027-${d}`),
]);
const UTAH_ORACLE = (weekday: string, date: string): [number, number] | null =>
  UTAH_HOLIDAYS.has(date) ? null : NO_SUNDAY(weekday);
// Louisiana (La. R.S. 1:55), the dates the cases below meet: Mardi Gras 2027 (Easter − 47) and
// Good Friday 2027 (Easter − 2). Hours 08:00–20:00, none on Sunday.
const LOUISIANA_ORACLE = (weekday: string, date: string): [number, number] | null =>
  weekday === 'Sun' || ['2027-02-09', '2027-03-26'].includes(date) ? null : [8 * 60, 20 * 60];
// Rhode Island (R.I. Gen. Laws § 25-1-1): Victory Day, the second Monday of August (2027-08-09).
// Hours 09:00–18:00 Monday to Friday, 10:00–17:00 Saturday, none on Sunday.
const RHODE_ISLAND_ORACLE = (weekday: string, date: string): [number, number] | null => {
  if (weekday === 'Sun' || date === '2027-08-09') return null;
  return weekday === 'Sat' ? [10 * 60, 17 * 60] : [9 * 60, 18 * 60];
};
const WHOLE_DAY = (): [number, number] => [0, 1440];
const WEEKDAYS_10_16: CallingWindow = { start: '10:00', end: '16:00', days: [1, 2, 3, 4, 5] };

/** The zones and their local times; for a number with many zones, their count and the closed ones. */
const zonesCell = (v: HoursVerdict): string => {
  const shown = (z: HoursVerdict['zones'][number]) =>
    `${z.zone} ${z.local.slice(11)}${z.allowed ? '' : ' ✗'}`;
  if (v.zones.length <= 3) return v.zones.map(shown).join(' | ');
  const closed = v.zones.filter((z) => !z.allowed);
  return `${v.zones.length} zones, ${closed.length === 0 ? 'all open' : `closed: ${closed.map(shown).join(' | ')}`}`;
};

const MATRIX: Case[] = [
  // One zone, US spring change (Sun 2026-03-08 02:00 local): Sat 21:30 EST is closed; Sunday's
  // 08:00 is already EDT (UTC-4), so 12:00Z, not 13:00Z.
  {
    name: 'New York, across the March change',
    phone: NUMBERS.newYork,
    atIso: '2026-03-08T02:30:00Z',
    expectAllowed: false,
    expectNext: '2026-03-08T12:00:00Z',
  },
  // US autumn change (Sun 2026-11-01 02:00 local): Sat 22:00 EDT closed; Sunday 08:00 EST = 13:00Z.
  {
    name: 'New York, across the November change',
    phone: NUMBERS.newYork,
    atIso: '2026-11-01T02:00:00Z',
    expectAllowed: false,
    expectNext: '2026-11-01T13:00:00Z',
  },
  {
    name: 'New York, 08:00 EDT is open',
    phone: NUMBERS.newYork,
    atIso: '2026-03-08T12:00:00Z',
    expectAllowed: true,
    expectNext: '2026-03-08T12:00:00Z',
  },
  // Two zones (701): Central 08:30 but Mountain 07:30 on the March Sunday (both already DST):
  // Mountain's 08:00 MDT = 14:00Z.
  {
    name: 'North Dakota (2 zones), March change day',
    phone: NUMBERS.northDakota,
    atIso: '2026-03-08T13:30:00Z',
    expectAllowed: false,
    expectNext: '2026-03-08T14:00:00Z',
  },
  // Central closes first: 20:59 CST (19:59 MST) open, 21:00 CST = 03:00Z closed; next Mountain 08:00 MST = 15:00Z.
  {
    name: 'North Dakota (2 zones), Nov, last open minute',
    phone: NUMBERS.northDakota,
    atIso: '2026-11-02T02:59:00Z',
    expectAllowed: true,
    expectNext: '2026-11-02T02:59:00Z',
  },
  {
    name: 'North Dakota (2 zones), Nov, Central closed',
    phone: NUMBERS.northDakota,
    atIso: '2026-11-02T03:00:00Z',
    expectAllowed: false,
    expectNext: '2026-11-02T15:00:00Z',
  },
  // Arizona keeps UTC-7 all year: 08:00 is 15:00Z in March (after the US change) and in July alike.
  {
    name: 'Arizona, March (no DST)',
    phone: NUMBERS.arizona,
    atIso: '2026-03-09T14:30:00Z',
    expectAllowed: false,
    expectNext: '2026-03-09T15:00:00Z',
  },
  {
    name: 'Arizona, July (no DST)',
    phone: NUMBERS.arizona,
    atIso: '2026-07-01T14:30:00Z',
    expectAllowed: false,
    expectNext: '2026-07-01T15:00:00Z',
  },
  // 709: St John's (UTC-3:30, DST -2:30) and Puerto Rico time (UTC-4, no DST). Winter: St John's
  // 08:15 but AST 07:45; opens at AST 08:00 = 12:00Z (St John's 08:30).
  {
    name: "709 (St John's -3:30 & AST), January",
    stateRules: false, // the zones' mechanics under the default hours; Canada's rule below
    phone: NUMBERS.newfoundland,
    atIso: '2026-01-15T11:45:00Z',
    expectAllowed: false,
    expectNext: '2026-01-15T12:00:00Z',
  },
  // Summer: St John's closes at 21:00 NDT = 23:30Z; next AST 08:00 = 12:00Z (St John's 09:30).
  {
    name: "709 (St John's -2:30 & AST), July",
    stateRules: false, // the zones' mechanics under the default hours; Canada's rule below
    phone: NUMBERS.newfoundland,
    atIso: '2026-07-15T23:40:00Z',
    expectAllowed: false,
    expectNext: '2026-07-16T12:00:00Z',
  },
  // Across the November change (St John's back to -3:30 at 04:30Z): 12:00Z is AST 08:00, NST 08:30.
  {
    name: '709, across the November change',
    stateRules: false, // the zones' mechanics under the default hours; Canada's rule below
    phone: NUMBERS.newfoundland,
    atIso: '2026-10-31T23:45:00Z',
    expectAllowed: false,
    expectNext: '2026-11-01T12:00:00Z',
  },
  // India UTC+5:30: 08:00 IST = 02:30Z; 21:00 IST = 15:30Z.
  {
    name: 'India (+5:30), before 08:00',
    phone: NUMBERS.india,
    atIso: '2026-03-08T02:29:00Z',
    expectAllowed: false,
    expectNext: '2026-03-08T02:30:00Z',
  },
  {
    name: 'India (+5:30), at 21:00',
    phone: NUMBERS.india,
    atIso: '2026-03-08T15:30:00Z',
    expectAllowed: false,
    expectNext: '2026-03-09T02:30:00Z',
  },
  // Nepal UTC+5:45: 08:00 NPT = 02:15Z.
  {
    name: 'Nepal (+5:45), before 08:00',
    phone: NUMBERS.nepal,
    atIso: '2026-03-08T02:00:00Z',
    expectAllowed: false,
    expectNext: '2026-03-08T02:15:00Z',
  },
  // EU change (Sun 2026-03-29 01:00Z): Sat 21:30 GMT closed, Sunday 08:00 BST = 07:00Z.
  {
    name: 'London, across the EU March change',
    phone: NUMBERS.london,
    atIso: '2026-03-28T21:30:00Z',
    expectAllowed: false,
    expectNext: '2026-03-29T07:00:00Z',
  },
  // EU autumn (Sun 2026-10-25 01:00Z): Sat 21:30 BST closed, Sunday 08:00 GMT = 08:00Z.
  {
    name: 'London, across the EU October change',
    phone: NUMBERS.london,
    atIso: '2026-10-24T20:30:00Z',
    expectAllowed: false,
    expectNext: '2026-10-25T08:00:00Z',
  },
  // Every NANP zone (Guam UTC+10 … Pago Pago UTC-11) in January: open only 22:00Z (Guam 08:00)
  // to 00:30Z (St John's 21:00).
  {
    name: 'unknown NANP area code (42 zones)',
    phone: NUMBERS.unknownNanp,
    atIso: '2026-01-15T21:59:00Z',
    expectAllowed: false,
    expectNext: '2026-01-15T22:00:00Z',
  },
  {
    name: 'unknown NANP area code, after 00:30Z',
    phone: NUMBERS.unknownNanp,
    atIso: '2026-01-16T00:30:00Z',
    expectAllowed: false,
    expectNext: '2026-01-16T22:00:00Z',
  },
  // Florida (US-FL): 08:00-20:00. Tue 20:30 EDT: New York is open, Florida is not until 08:00 EDT.
  {
    name: 'New York at 20:30 (default 21:00)',
    phone: NUMBERS.newYork,
    atIso: '2026-06-10T00:30:00Z',
    expectAllowed: true,
    expectNext: '2026-06-10T00:30:00Z',
  },
  {
    name: 'Florida at 20:30 (state 20:00)',
    phone: NUMBERS.florida,
    atIso: '2026-06-10T00:30:00Z',
    oracleHours: FLORIDA_ORACLE,
    expectAllowed: false,
    expectNext: '2026-06-10T12:00:00Z',
  },
  {
    name: 'Florida at 20:30, state rules off',
    phone: NUMBERS.florida,
    atIso: '2026-06-10T00:30:00Z',
    stateRules: false,
    expectAllowed: true,
    expectNext: '2026-06-10T00:30:00Z',
  },
  // Utah: no calls on Sunday. Sun 12:00 MDT closed; Monday 08:00 MDT = 14:00Z.
  {
    name: 'Utah on a Sunday',
    phone: NUMBERS.utah,
    atIso: '2026-06-07T18:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: false,
    expectNext: '2026-06-08T14:00:00Z',
  },
  // Legal holidays. Utah, Pioneer Day 2027 (July 24) is a Saturday, kept on Friday July 23 too:
  // Friday 10:00 MDT closed, Saturday the holiday itself, Sunday closed; Monday 08:00 MDT = 14:00Z.
  {
    name: 'Utah, Pioneer Day observed (Fri)',
    phone: NUMBERS.utah,
    atIso: '2027-07-23T16:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: false,
    expectNext: '2027-07-26T14:00:00Z',
  },
  {
    name: 'Utah, Pioneer Day (Sat)',
    phone: NUMBERS.utah,
    atIso: '2027-07-24T16:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: false,
    expectNext: '2027-07-26T14:00:00Z',
  },
  {
    name: 'Utah, the Monday after Pioneer Day',
    phone: NUMBERS.utah,
    atIso: '2027-07-26T16:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: true,
    expectNext: '2027-07-26T16:00:00Z',
  },
  // Thursday 19:00 MDT is already Friday July 23 in UTC: the callee's date counts, so it is open.
  {
    name: 'Utah, eve of the holiday (UTC date is it)',
    phone: NUMBERS.utah,
    atIso: '2027-07-23T01:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: true,
    expectNext: '2027-07-23T01:00:00Z',
  },
  // July 4, 2027 is a Sunday, kept on Monday July 5: Saturday 21:30 MDT closed, then Sunday, then
  // the observed Monday; Tuesday 08:00 MDT = 14:00Z.
  {
    name: 'Utah, July 4 (Sun) observed Monday',
    phone: NUMBERS.utah,
    atIso: '2027-07-04T03:30:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: false,
    expectNext: '2027-07-06T14:00:00Z',
  },
  // Juneteenth 2026 (Fri June 19) is kept on the Monday before, June 15: next is Tuesday.
  {
    name: 'Utah, Juneteenth on the Monday before',
    phone: NUMBERS.utah,
    atIso: '2026-06-15T16:00:00Z',
    oracleHours: UTAH_ORACLE,
    expectAllowed: false,
    expectNext: '2026-06-16T14:00:00Z',
  },
  {
    name: 'Utah, Pioneer Day, state rules off',
    phone: NUMBERS.utah,
    atIso: '2027-07-24T16:00:00Z',
    stateRules: false,
    expectAllowed: true,
    expectNext: '2027-07-24T16:00:00Z',
  },
  // Louisiana: Mardi Gras 2027 (Tue Feb 9, Easter March 28 − 47) 10:00 CST closed; Wednesday
  // 08:00 CST = 14:00Z.
  {
    name: 'Louisiana, Mardi Gras',
    phone: NUMBERS.louisiana,
    atIso: '2027-02-09T16:00:00Z',
    oracleHours: LOUISIANA_ORACLE,
    expectAllowed: false,
    expectNext: '2027-02-10T14:00:00Z',
  },
  {
    name: 'Louisiana, the day after Mardi Gras',
    phone: NUMBERS.louisiana,
    atIso: '2027-02-10T16:00:00Z',
    oracleHours: LOUISIANA_ORACLE,
    expectAllowed: true,
    expectNext: '2027-02-10T16:00:00Z',
  },
  // Good Friday 2027 (March 26) 11:00 CDT closed; Saturday 08:00 CDT = 13:00Z.
  {
    name: 'Louisiana, Good Friday',
    phone: NUMBERS.louisiana,
    atIso: '2027-03-26T16:00:00Z',
    oracleHours: LOUISIANA_ORACLE,
    expectAllowed: false,
    expectNext: '2027-03-27T13:00:00Z',
  },
  // Rhode Island: Victory Day 2027 (second Monday of August, the 9th) 12:00 EDT closed; Tuesday
  // 09:00 EDT = 13:00Z.
  {
    name: 'Rhode Island, Victory Day',
    phone: NUMBERS.rhodeIsland,
    atIso: '2027-08-09T16:00:00Z',
    oracleHours: RHODE_ISLAND_ORACLE,
    expectAllowed: false,
    expectNext: '2027-08-10T13:00:00Z',
  },
  {
    name: 'Rhode Island, the day after Victory Day',
    phone: NUMBERS.rhodeIsland,
    atIso: '2027-08-10T16:00:00Z',
    oracleHours: RHODE_ISLAND_ORACLE,
    expectAllowed: true,
    expectNext: '2027-08-10T16:00:00Z',
  },
  // New York has no holiday rule: the same instants are open.
  ...['2027-07-23T16:00:00Z', '2027-02-09T16:00:00Z', '2027-03-26T16:00:00Z', '2027-08-09T16:00:00Z'].map(
    (atIso): Case => ({
      name: `New York on ${atIso.slice(0, 10)} (a holiday elsewhere)`,
      phone: NUMBERS.newYork,
      atIso,
      expectAllowed: true,
      expectNext: atIso,
    }),
  ),
  // The firm's window (10:00-16:00 Mon-Fri, Chicago) narrows: 10:30 EDT is 09:30 CDT; opens 15:00Z.
  {
    name: 'firm window narrows (Chicago 10-16)',
    phone: NUMBERS.newYork,
    atIso: '2026-06-10T14:30:00Z',
    firmTimeZone: 'America/Chicago',
    firmWindow: WEEKDAYS_10_16,
    expectAllowed: false,
    expectNext: '2026-06-10T15:00:00Z',
  },
  // Friday 16:30 CDT: the window's next opening is Monday 10:00 CDT = 15:00Z.
  {
    name: 'firm window, Friday evening',
    phone: NUMBERS.newYork,
    atIso: '2026-06-12T21:30:00Z',
    firmTimeZone: 'America/Chicago',
    firmWindow: WEEKDAYS_10_16,
    expectAllowed: false,
    expectNext: '2026-06-15T15:00:00Z',
  },
  // A window opening at a wall time the spring change skips (02:30 on 2026-03-08 in New York): it
  // opens at the change itself, 03:00 EDT = 07:00Z. (Hours widened so that only the window counts.)
  {
    name: 'window opening in the March gap',
    phone: NUMBERS.newYork,
    atIso: '2026-03-08T06:00:00Z',
    hours: { start: '00:00', end: '24:00' },
    oracleHours: WHOLE_DAY,
    firmWindow: { start: '02:30', end: '05:00', days: [1, 2, 3, 4, 5, 6, 7] },
    expectAllowed: false,
    expectNext: '2026-03-08T07:00:00Z',
  },
  // A window 01:30-01:45 on the November Sunday happens twice: 05:30Z (EDT) and again 06:30Z (EST).
  {
    name: 'window repeated in the November overlap',
    phone: NUMBERS.newYork,
    atIso: '2026-11-01T05:50:00Z',
    hours: { start: '00:00', end: '24:00' },
    oracleHours: WHOLE_DAY,
    firmWindow: { start: '01:30', end: '01:45', days: [1, 2, 3, 4, 5, 6, 7] },
    expectAllowed: false,
    expectNext: '2026-11-01T06:30:00Z',
  },
  // The lead's own zone does not narrow 701 to Central: the number may be in Mountain too (the
  // contract's "every possible zone of the number"), where 08:30 CDT is 07:30: closed until 14:00Z.
  {
    name: 'lead zone does not narrow 701 to Central',
    phone: NUMBERS.northDakota,
    atIso: '2026-06-10T13:30:00Z',
    leadTimeZone: 'America/North_Dakota/Center',
    expectAllowed: false,
    expectNext: '2026-06-10T14:00:00Z',
  },
  {
    name: '701 without the lead zone',
    phone: NUMBERS.northDakota,
    atIso: '2026-06-10T13:30:00Z',
    expectAllowed: false,
    expectNext: '2026-06-10T14:00:00Z',
  },
  // A lead zone the number cannot be in never widens its hours: 212 with a Los Angeles lead is
  // judged in New York and Los Angeles both. 22:30 EDT (19:30 PDT): closed by New York, and next
  // open when Los Angeles reaches 08:00 (11:00 EDT).
  {
    name: 'lead zone outside the number adds to its zones (closed)',
    phone: NUMBERS.newYork,
    atIso: '2026-06-11T02:30:00Z',
    leadTimeZone: 'America/Los_Angeles',
    expectAllowed: false,
    expectNext: '2026-06-11T15:00:00Z',
  },
  {
    name: 'lead zone outside the number adds to its zones (open)',
    phone: NUMBERS.newYork,
    atIso: '2026-06-10T16:00:00Z',
    leadTimeZone: 'America/Los_Angeles',
    expectAllowed: true,
    expectNext: '2026-06-10T16:00:00Z',
  },
  // The same zone under another name (libphonenumber's Asia/Calcutta, a lead's Asia/Kolkata) is not added twice.
  {
    name: 'lead zone alias of +91',
    phone: NUMBERS.india,
    atIso: '2026-06-10T04:30:00Z',
    leadTimeZone: 'Asia/Kolkata',
    expectAllowed: true,
    expectNext: '2026-06-10T04:30:00Z',
  },
];

describe('calling hours in every possible zone of the number', () => {
  it('the frozen-clock matrix: allowed only inside every zone, next opening exact to the minute', () => {
    const rows: string[][] = [];
    for (const c of MATRIX) {
      const v = judge(c);
      rows.push([
        c.name,
        c.phone,
        iso(at(c.atIso)),
        zonesCell(v),
        v.region ?? '-',
        v.allowed ? 'allowed' : 'deferred',
        iso(v.nextAllowedMs),
        v.limitedBy.join(','),
        (v.closedBy ?? []).join(',') || '-',
      ]);
      expect({ name: c.name, allowed: v.allowed, next: iso(v.nextAllowedMs) }).toEqual({
        name: c.name,
        allowed: c.expectAllowed,
        next: iso(c.expectNext === null ? null : at(c.expectNext)),
      });
      checkAgainstOracle(c, v);
    }
    const head = [
      'case',
      'number',
      'at (UTC)',
      'zones: local time',
      'region',
      'verdict',
      'next (UTC)',
      'limited by',
    ];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
    console.log(['', line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n'));
    // About a second alone; minutes of Intl work are no wall-clock claim, so a busy machine gets room.
  });

  it('finds the possible zones and the region in libphonenumber data', () => {
    expect(placeOfNumber(NUMBERS.northDakota)).toEqual({
      zones: ['America/Denver', 'America/North_Dakota/Center'],
      region: 'US-ND',
    });
    expect(placeOfNumber(NUMBERS.newfoundland)).toEqual({
      zones: ['America/Puerto_Rico', 'America/St_Johns'],
      region: 'CA-NL',
    });
    expect(placeOfNumber(NUMBERS.arizona)).toEqual({ zones: ['America/Phoenix'], region: 'US-AZ' });
    expect(placeOfNumber(NUMBERS.florida)).toEqual({ zones: ['America/New_York'], region: 'US-FL' });
    expect(placeOfNumber('+18505550100').region).toBe('US-FL'); // the panhandle's 850
    expect(placeOfNumber('+14055550100').region).toBe('US-OK');
    expect(placeOfNumber('+14165550100')).toEqual({ zones: ['America/Toronto'], region: 'CA-ON' });
    expect(placeOfNumber(NUMBERS.india)).toEqual({ zones: ['Asia/Calcutta'], region: 'IN' });
    expect(placeOfNumber(NUMBERS.london)).toEqual({ zones: ['Europe/London'], region: 'GB' });
    expect(placeOfNumber(NUMBERS.unknownNanp).zones).toHaveLength(42);
    expect(placeOfNumber('not a number')).toEqual({ zones: [], region: null });
  });

  it('reports a state cap, the state in limitedBy, and which constraint is closed', () => {
    const florida = judge({
      name: 'fl',
      phone: NUMBERS.florida,
      atIso: '2026-06-10T00:30:00Z',
      expectAllowed: false,
      expectNext: null,
    });
    expect(florida).toMatchObject({
      region: 'US-FL',
      attemptsPer24h: 3,
      limitedBy: ['default', 'state:US-FL'],
      closedBy: ['zone:America/New_York'],
    });
    const oklahoma = judge({
      name: 'ok',
      phone: '+14055550100',
      atIso: '2026-06-10T01:30:00Z',
      expectAllowed: false,
      expectNext: null,
    });
    expect(oklahoma).toMatchObject({ region: 'US-OK', attemptsPer24h: 3, allowed: false }); // 20:30 CDT
    const off = judge({
      name: 'off',
      phone: NUMBERS.florida,
      atIso: '2026-06-10T00:30:00Z',
      stateRules: false,
      expectAllowed: true,
      expectNext: null,
    });
    expect(off).toMatchObject({ attemptsPer24h: null, limitedBy: ['default'], allowed: true });
    const window = judge(MATRIX.find((c) => c.name.startsWith('firm window narrows'))!);
    expect(window).toMatchObject({ limitedBy: ['default', 'firm_window'], closedBy: ['firm_window'] });
    const lead = judge(MATRIX.find((c) => c.name.startsWith('lead zone does not narrow'))!);
    expect(lead).toMatchObject({ zoneSource: 'number', limitedBy: ['default', 'lead_timezone'] });
    expect(lead.zones.map((z) => z.zone).sort()).toEqual(['America/Denver', 'America/North_Dakota/Center']);
    expect(lead.closedBy).toEqual(['zone:America/Denver']);
    const outside = judge(MATRIX.find((c) => c.name.endsWith('adds to its zones (closed)'))!);
    expect(outside).toMatchObject({ zoneSource: 'number', limitedBy: ['default', 'lead_timezone'] });
    expect(outside.zones.map((z) => z.zone)).toEqual(['America/New_York', 'America/Los_Angeles']);
    const alias = judge(MATRIX.find((c) => c.name === 'lead zone alias of +91')!);
    expect(alias).toMatchObject({ zoneSource: 'number' });
    expect(alias.zones.map((z) => z.zone)).toEqual(['Asia/Calcutta']);
  });

  it('formats each zone as "YYYY-MM-DD HH:mm (ddd)"', () => {
    const v = judge(MATRIX[0]!);
    expect(v.zones).toEqual([{ zone: 'America/New_York', local: '2026-03-07 21:30 (Sat)', allowed: false }]);
    const nepal = judge(MATRIX.find((c) => c.phone === NUMBERS.nepal)!);
    expect(nepal.zones[0]!.local).toBe('2026-03-08 07:45 (Sun)');
  });

  it('falls back to the firm zone for what is no number of a country, and ignores a lead zone that is not one', () => {
    const v = judgeHours({
      phone: '12',
      firmTimeZone: 'Asia/Tokyo',
      atMs: at('2026-06-10T00:30:00Z'),
      hours: HOURS,
      stateRules: true,
      leadTimeZone: 'Mars/Olympus',
    });
    expect(v).toMatchObject({ zoneSource: 'firm', region: null, allowed: true, limitedBy: ['default'] });
    expect(v.zones).toEqual([{ zone: 'Asia/Tokyo', local: '2026-06-10 09:30 (Wed)', allowed: true }]);
  });

  it('a possible number of no country libphonenumber names: its main country, every zone its prefix may be in', () => {
    // +1 555 is no area code: the country is US (the main one of +1, parseDialable), no state; the
    // zones are every NANP zone (the data's "1" prefix), not the firm's.
    expect(placeOfNumber('+15555550000')).toMatchObject({ region: 'US' });
    expect(placeOfNumber('+15555550000').zones).toHaveLength(42);
    expect(placeOfNumber('+447700900123')).toEqual({
      zones: ['Europe/Guernsey', 'Europe/Isle_of_Man', 'Europe/London'],
      region: 'GB',
    });
    // 15:00Z on a January Thursday: 10:00 for a New York firm, 01:00 in Guam (UTC+10): deferred to
    // 22:00Z, when Guam opens at 08:00 and Pago Pago (UTC-11) is still before 21:00.
    const v = judgeHours({
      phone: '+15555550000',
      firmTimeZone: 'America/New_York',
      atMs: at('2026-01-15T15:00:00Z'),
      hours: HOURS,
      stateRules: true,
    });
    expect(v).toMatchObject({ zoneSource: 'number', region: 'US', allowed: false, limitedBy: ['default'] });
    expect(iso(v.nextAllowedMs)).toBe('2026-01-15T22:00Z');
    expect(v.zones).toHaveLength(42);
    expect(v.closedBy).toContain('zone:Pacific/Guam');
  });

  it('a number of a country whose own prefix the zone data lacks: every zone of its calling code, never none', () => {
    const table = {
      '1201': 'America/New_York',
      '1907': 'America/Anchorage&America/Adak',
      '1808': 'Pacific/Honolulu',
      '4420': 'Europe/London',
      '7': 'Europe/Moscow&Not/A_Zone',
    };
    expect(zonesOfCallingCode('1', table)).toEqual([
      'America/Adak',
      'America/Anchorage',
      'America/New_York',
      'Pacific/Honolulu',
    ]);
    expect(zonesOfCallingCode('44', table)).toEqual(['Europe/London']);
    expect(zonesOfCallingCode('7', table)).toEqual(['Europe/Moscow']);
    expect(zonesOfCallingCode('49', table)).toEqual([]);
    // libphonenumber's own table has zones for the calling code of every country it knows, so a
    // number of a country is never judged in no zone (nor in the firm's).
    for (const country of getCountries()) {
      expect(zonesOfCallingCode(getCountryCallingCode(country)).length, country).toBeGreaterThan(0);
    }
    expect(zonesOfCallingCode('1')).toHaveLength(42);
    expect(zonesOfCallingCode('44')).toEqual([
      'Europe/Guernsey',
      'Europe/Isle_of_Man',
      'Europe/Jersey',
      'Europe/London',
    ]);
  });

  it('widened hours (a test stack) open every zone; hours with no common minute give no next opening', () => {
    const wide = judgeHours({
      phone: NUMBERS.unknownNanp,
      firmTimeZone: 'UTC',
      atMs: at('2026-01-15T05:00:00Z'),
      hours: { start: '00:00', end: '24:00' },
      stateRules: true,
    });
    expect(wide.allowed).toBe(true);
    // 08:00-08:30 in St John's (UTC-3:30: 11:30Z-12:00Z) and in AST (UTC-4: 12:00Z-12:30Z) never meet.
    const never = judgeHours({
      phone: NUMBERS.newfoundland,
      firmTimeZone: 'UTC',
      atMs: at('2026-01-15T05:00:00Z'),
      hours: { start: '08:00', end: '08:30' },
      stateRules: true,
    });
    expect(never).toMatchObject({ allowed: false, nextAllowedMs: null });
  });

  it('agrees with the oracle at random instants of 2026 for every kind of number', () => {
    let seed = 30;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const start = at('2026-01-01T00:00:00Z');
    const phones = [
      NUMBERS.newYork,
      NUMBERS.northDakota,
      NUMBERS.newfoundland,
      NUMBERS.arizona,
      NUMBERS.india,
      NUMBERS.nepal,
      NUMBERS.london,
      NUMBERS.florida,
      NUMBERS.utah,
    ];
    const oracles = new Map([
      [NUMBERS.florida, FLORIDA_ORACLE],
      [NUMBERS.utah, UTAH_ORACLE],
      [NUMBERS.newfoundland, CANADA_ORACLE],
    ]);
    for (let i = 0; i < 90; i++) {
      const phone = phones[i % phones.length]!;
      const ms = start + Math.floor(random() * 365 * 24 * 60) * 60_000 + Math.floor(random() * 60_000);
      const c: Case = {
        name: `random ${phone} ${iso(ms)}`,
        phone,
        atIso: new Date(ms).toISOString(),
        oracleHours: oracles.get(phone),
        expectAllowed: false,
        expectNext: null,
      };
      const v = judge(c);
      expect(v.nextAllowedMs, c.name).not.toBeNull();
      checkAgainstOracle(c, v);
    }
  });
});

describe("the states' legal holidays", () => {
  const file = JSON.parse(readFileSync(RULES_FILE, 'utf8')) as {
    regions: Record<string, { holidays?: HolidayRules }>;
  };
  const holidays = (region: string): HolidayRules => file.regions[region]!.holidays!;
  const ymd = (dayNumber: number | null): string =>
    dayNumber === null ? 'none' : new Date(dayNumber * 86_400_000).toISOString().slice(0, 10);
  const rule = (region: string, name: string) => holidays(region).days.find((d) => d.name === name)!;

  it('computes Easter Sunday with the anonymous Gregorian algorithm', () => {
    const known: Record<number, string> = {
      1818: '03-22', // the earliest possible date
      1943: '04-25', // the latest possible date
      2000: '04-23',
      2019: '04-21',
      2024: '03-31',
      2025: '04-20',
      2026: '04-05',
      2027: '03-28',
      2038: '04-25',
    };
    for (const [year, date] of Object.entries(known)) {
      const [month, day] = easterSunday(Number(year));
      expect(`${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`).toBe(
        `${year}-${date}`,
      );
    }
  });

  it("computes each kind of rule's date for any year", () => {
    expect(ymd(holidayDate(rule('US-UT', 'Pioneer Day'), 2027))).toBe('2027-07-24');
    expect(ymd(holidayDate(rule('US-UT', 'Dr. Martin Luther King, Jr. Day'), 2027))).toBe('2027-01-18');
    expect(ymd(holidayDate(rule('US-UT', 'Memorial Day'), 2027))).toBe('2027-05-31'); // last Monday
    expect(ymd(holidayDate(rule('US-UT', 'Memorial Day'), 2026))).toBe('2026-05-25');
    expect(ymd(holidayDate(rule('US-UT', 'Thanksgiving Day'), 2027))).toBe('2027-11-25');
    expect(ymd(holidayDate(rule('US-RI', 'Victory Day'), 2027))).toBe('2027-08-09');
    expect(ymd(holidayDate(rule('US-RI', 'Victory Day'), 2026))).toBe('2026-08-10');
    expect(ymd(holidayDate(rule('US-LA', 'Mardi Gras'), 2025))).toBe('2025-03-04');
    expect(ymd(holidayDate(rule('US-LA', 'Mardi Gras'), 2026))).toBe('2026-02-17');
    expect(ymd(holidayDate(rule('US-LA', 'Mardi Gras'), 2027))).toBe('2027-02-09');
    expect(ymd(holidayDate(rule('US-LA', 'Good Friday'), 2025))).toBe('2025-04-18');
    expect(ymd(holidayDate(rule('US-LA', 'Good Friday'), 2027))).toBe('2027-03-26');
    // The Tuesday after the first Monday of November, in even years only (from 2027 every year in Utah).
    expect(ymd(holidayDate(rule('US-RI', 'Election Day'), 2026))).toBe('2026-11-03');
    expect(ymd(holidayDate(rule('US-RI', 'Election Day'), 2027))).toBe('none');
    expect(ymd(holidayDate(rule('US-RI', 'Election Day'), 2028))).toBe('2028-11-07');
    expect(ymd(holidayDate(rule('US-UT', 'Election Day'), 2026))).toBe('none');
    expect(ymd(holidayDate(rule('US-UT', 'Election Day'), 2027))).toBe('2027-11-02');
  });

  it("keeps observed days as each statute says, across the year's end", () => {
    const dates = (region: string, year: number): string[] =>
      [...holidaysOfYear(holidays(region), year)].map(
        ([mmdd, names]) =>
          `${String(Math.floor(mmdd / 100)).padStart(2, '0')}-${String(mmdd % 100).padStart(2, '0')} ${names.join(' + ')}`,
      );
    const utah2027 = dates('US-UT', 2027);
    expect(utah2027).toContain('07-23 Pioneer Day (observed)'); // Saturday → Friday
    expect(utah2027).toContain('07-05 Independence Day (observed)'); // Sunday → Monday
    expect(utah2027).toContain('06-21 Juneteenth National Freedom Day (observed)'); // Saturday → Monday after
    expect(utah2027).toContain("12-31 New Year's Day (observed)"); // January 1, 2028 is a Saturday
    expect(dates('US-UT', 2026)).toContain('06-15 Juneteenth National Freedom Day (observed)'); // Friday → Monday before
    // Rhode Island keeps a weekend holiday on the following Monday only: Christmas 2027 (Sat) → Dec 27.
    const ri2027 = dates('US-RI', 2027);
    expect(ri2027).toContain('12-27 Christmas Day (observed)');
    expect(ri2027.some((d) => d.startsWith('12-24'))).toBe(false);
    // Every date of the hand-written Utah list, and no other weekday.
    const computed = new Set(
      [2026, 2027].flatMap((y) => dates('US-UT', y).map((d) => `${y}-${d.slice(0, 5)}`)),
    );
    expect([...UTAH_HOLIDAYS].filter((d) => !computed.has(d))).toEqual([]);
    const extra = [...computed].filter(
      (d) => !UTAH_HOLIDAYS.has(d) && new Date(`${d}T12:00:00Z`).getUTCDay() !== 0,
    );
    expect(extra).toEqual([]);
  });

  it('names the holiday in limitedBy, and leaves other states alone', () => {
    const friday = judge(MATRIX.find((c) => c.name === 'Utah, Pioneer Day observed (Fri)')!);
    expect(friday.limitedBy).toEqual([
      'default',
      'state:US-UT',
      'holiday:US-UT:Pioneer Day (observed)',
      'holiday:US-UT:Pioneer Day',
    ]);
    expect(friday.closedBy).toEqual(['zone:America/Denver']);
    expect(friday.zones).toEqual([
      { zone: 'America/Denver', local: '2027-07-23 10:00 (Fri)', allowed: false },
    ]);
    const victory = judge(MATRIX.find((c) => c.name === 'Rhode Island, Victory Day')!);
    expect(victory.limitedBy).toEqual(['default', 'state:US-RI', 'holiday:US-RI:Victory Day']);
    const mardiGras = judge(MATRIX.find((c) => c.name === 'Louisiana, Mardi Gras')!);
    expect(mardiGras.limitedBy).toContain('holiday:US-LA:Mardi Gras');
    const goodFriday = judge(MATRIX.find((c) => c.name === 'Louisiana, Good Friday')!);
    expect(goodFriday.limitedBy).toContain('holiday:US-LA:Good Friday');
    // Closed by the hours only (Saturday 21:30 MDT before an ordinary Sunday): no holiday named.
    const hoursOnly = judgeHours({
      phone: NUMBERS.utah,
      firmTimeZone: 'UTC',
      atMs: at('2027-08-15T03:30:00Z'),
      hours: HOURS,
      stateRules: true,
    });
    expect(hoursOnly).toMatchObject({ allowed: false, limitedBy: ['default', 'state:US-UT'] });
    expect(iso(hoursOnly.nextAllowedMs)).toBe('2027-08-16T14:00Z');
    // Mississippi repealed its holiday ban: Sundays only.
    expect(file.regions['US-MS']!.holidays).toBeUndefined();
    const mississippi = judgeHours({
      phone: '+16015550100', // 601: Jackson, MS
      firmTimeZone: 'UTC',
      atMs: at('2027-07-05T16:00:00Z'), // Monday July 5, 2027: Independence Day observed elsewhere
      hours: HOURS,
      stateRules: true,
    });
    expect(mississippi).toMatchObject({ region: 'US-MS', allowed: true });
  });
});

describe('the state rules table', () => {
  const file = JSON.parse(readFileSync(RULES_FILE, 'utf8')) as {
    effective_date: string;
    regions: Record<
      string,
      {
        hours?: { start: string; end: string };
        weekday_hours?: Record<string, unknown>;
        attempts_per_24h?: number;
        holidays?: HolidayRules;
        sources: { cite: string; url: string }[];
      }
    >;
  };

  it('has an effective date, and its version is that date with a hash of the file', () => {
    expect(file.effective_date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const hash = createHash('sha256').update(readFileSync(RULES_FILE)).digest('hex').slice(0, 8);
    expect(STATE_RULES_VERSION).toBe(`${file.effective_date}.${hash}`);
    expect(judge(MATRIX[0]!).rulesVersion).toBe(STATE_RULES_VERSION);
  });

  it('keys every rule by region, with well-formed hours and at least one source', () => {
    const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
    for (const [region, rule] of Object.entries(file.regions)) {
      expect(region).toMatch(/^[A-Z]{2}(-[A-Z0-9]{1,3})?$/);
      if (rule.hours)
        expect(
          [rule.hours.start, rule.hours.end].every((t) => HHMM.test(t)),
          region,
        ).toBe(true);
      for (const [day, h] of Object.entries(rule.weekday_hours ?? {})) {
        expect(['1', '2', '3', '4', '5', '6', '7']).toContain(day);
        if (h !== null)
          expect(h).toMatchObject({ start: expect.stringMatching(HHMM), end: expect.stringMatching(HHMM) });
      }
      if (rule.attempts_per_24h !== undefined)
        expect(Number.isInteger(rule.attempts_per_24h) && rule.attempts_per_24h > 0).toBe(true);
      expect(rule.sources.length, region).toBeGreaterThan(0);
      for (const s of rule.sources)
        expect(s.cite.length > 10 && /^https?:\/\//.test(s.url), region).toBe(true);
    }
    expect(file.regions['US-FL']).toMatchObject({
      hours: { start: '08:00', end: '20:00' },
      attempts_per_24h: 3,
    });
  });

  it('gives every holiday a name, one kind of rule and a citation, and each list its statute', () => {
    const withHolidays = Object.entries(file.regions).filter(([, r]) => r.holidays !== undefined);
    expect(withHolidays.map(([region]) => region).sort()).toEqual([
      'US-AL',
      'US-LA',
      'US-PA',
      'US-RI',
      'US-UT',
    ]);
    for (const [region, { holidays }] of withHolidays) {
      expect(holidays!.statute.cite.length > 10 && /^https?:\/\//.test(holidays!.statute.url), region).toBe(
        true,
      );
      const names = new Set<string>();
      for (const h of holidays!.days) {
        expect(h.name.length, region).toBeGreaterThan(0);
        expect(names.has(h.name), `${region} ${h.name} twice`).toBe(false);
        names.add(h.name);
        expect(h.cite.length, `${region} ${h.name}`).toBeGreaterThan(5);
        const kinds = [
          h.day !== undefined,
          h.weekday !== undefined && h.nth !== undefined,
          h.easter_offset !== undefined,
        ];
        expect(kinds.filter(Boolean).length, `${region} ${h.name}`).toBe(1);
        if (h.easter_offset === undefined) expect(h.month! >= 1 && h.month! <= 12, h.name).toBe(true);
      }
    }
    const named = (region: string) => file.regions[region]!.holidays!.days.map((d) => d.name);
    expect(named('US-UT')).toEqual(expect.arrayContaining(['Pioneer Day', 'Good Friday']));
    expect(named('US-LA')).toEqual(expect.arrayContaining(['Mardi Gras', 'Good Friday', "All Saints' Day"]));
    expect(named('US-RI')).toEqual(expect.arrayContaining(['Victory Day', 'Rhode Island Independence Day']));
    expect(file.regions['US-OK']).toMatchObject({
      hours: { start: '08:00', end: '20:00' },
      attempts_per_24h: 3,
    });
  });
});

describe('Texas, Washington, Connecticut and Mississippi’s hours (from secondary sources, included conservatively)', () => {
  const judgeAt = (phone: string, atIso: string, stateRules = true) =>
    judgeHours({ phone, firmTimeZone: 'UTC', atMs: at(atIso), hours: HOURS, stateRules });

  it('Texas: 09:00-21:00, and on Sundays from noon', () => {
    const austin = '+15125550100'; // 512: America/Chicago, US-TX; CST until 2027-03-14
    const sunday = judgeAt(austin, '2027-03-07T16:00:00Z'); // Sunday 10:00 CST
    expect(sunday).toMatchObject({ region: 'US-TX', allowed: false });
    expect(sunday.limitedBy).toContain('state:US-TX');
    expect(iso(sunday.nextAllowedMs)).toBe('2027-03-07T18:00Z'); // noon CST
    const monday = judgeAt(austin, '2027-03-08T14:30:00Z'); // Monday 08:30 CST
    expect(monday).toMatchObject({ allowed: false });
    expect(iso(monday.nextAllowedMs)).toBe('2027-03-08T15:00Z'); // 09:00 CST
    expect(judgeAt(austin, '2027-03-07T16:00:00Z', false)).toMatchObject({ allowed: true });
  });

  it('Canada (any province): 09:30-20:00 on weekdays, 10:30-17:00 on Saturdays, noon-17:00 on Sundays', () => {
    const toronto = '+14165550100'; // 416: America/Toronto, CA-ON; EDT in June 2027
    const saturday = judgeAt(toronto, '2027-06-12T14:05:00Z'); // Saturday 10:05 EDT
    expect(saturday).toMatchObject({ region: 'CA-ON', allowed: false });
    expect(saturday.limitedBy).toContain('state:CA-ON');
    expect(iso(saturday.nextAllowedMs)).toBe('2027-06-12T14:30Z'); // 10:30 EDT
    const sunday = judgeAt(toronto, '2027-06-13T15:00:00Z'); // Sunday 11:00 EDT
    expect(iso(sunday.nextAllowedMs)).toBe('2027-06-13T16:00Z'); // noon EDT
    const weekday = judgeAt(toronto, '2027-06-10T00:30:00Z'); // Wednesday 20:30 EDT
    expect(weekday).toMatchObject({ allowed: false });
    expect(iso(weekday.nextAllowedMs)).toBe('2027-06-10T13:30Z'); // Thursday 09:30 EDT
    expect(judgeAt(toronto, '2027-06-10T14:00:00Z')).toMatchObject({ allowed: true }); // 10:00 EDT
    // The default alone (08:00-21:00) would have allowed each refused one.
    for (const when of ['2027-06-12T14:05:00Z', '2027-06-13T15:00:00Z', '2027-06-10T00:30:00Z'])
      expect(judgeAt(toronto, when, false)).toMatchObject({ allowed: true });
  });

  it('Washington closes at 20:00, Connecticut opens at 09:00 and closes at 20:00, Mississippi closes at 20:00', () => {
    const seattle = judgeAt('+12065550100', '2027-06-11T03:30:00Z'); // Thursday 20:30 PDT
    expect(seattle).toMatchObject({ region: 'US-WA', allowed: false });
    expect(iso(seattle.nextAllowedMs)).toBe('2027-06-11T15:00Z'); // Friday 08:00 PDT
    const hartford = judgeAt('+18605550100', '2027-06-10T12:30:00Z'); // Thursday 08:30 EDT
    expect(hartford).toMatchObject({ region: 'US-CT', allowed: false });
    expect(iso(hartford.nextAllowedMs)).toBe('2027-06-10T13:00Z'); // 09:00 EDT
    expect(judgeAt('+18605550100', '2027-06-11T00:30:00Z')).toMatchObject({ allowed: false }); // 20:30 EDT
    const jackson = judgeAt('+16015550100', '2027-06-11T01:30:00Z'); // Thursday 20:30 CDT
    expect(jackson).toMatchObject({ region: 'US-MS', allowed: false });
    expect(iso(jackson.nextAllowedMs)).toBe('2027-06-11T14:00Z'); // Friday 09:00 CDT = 08:00 CST
    // The default alone (08:00-21:00) would have allowed each of them.
    for (const [phone, when] of [
      ['+12065550100', '2027-06-11T03:30:00Z'],
      ['+18605550100', '2027-06-10T12:30:00Z'],
      ['+16015550100', '2027-06-11T01:30:00Z'],
    ] as const)
      expect(judgeAt(phone, when, false)).toMatchObject({ allowed: true });
  });
});

describe('the states missing from the table until 2026-12-03', () => {
  const judgeAt = (phone: string, atIso: string, stateRules = true) =>
    judgeHours({ phone, firmTimeZone: 'UTC', atMs: at(atIso), hours: HOURS, stateRules });
  // [state, number, instant refused, the next opening]; each allowed by the default hours alone.
  const REFUSED = [
    ['US-KY', '+15025550100', '2027-06-09T13:30:00Z', '2027-06-09T14:00Z'], // Wed 09:30 EDT → 10:00
    ['US-MA', '+16175550100', '2027-06-10T00:30:00Z', '2027-06-10T12:00Z'], // Wed 20:30 EDT → Thu 08:00
    ['US-MI', '+13135550100', '2027-06-09T12:30:00Z', '2027-06-09T13:00Z'], // Wed 08:30 EDT → 09:00
    ['US-MN', '+16125550100', '2027-06-09T13:30:00Z', '2027-06-09T14:00Z'], // Wed 08:30 CDT → 09:00
    ['US-NV', '+17025550100', '2027-06-10T03:30:00Z', '2027-06-10T16:00Z'], // Wed 20:30 PDT → Thu 09:00
    ['US-NM', '+15055550100', '2027-06-09T14:30:00Z', '2027-06-09T15:00Z'], // Wed 08:30 MDT → 09:00
    ['US-IL', '+13125550100', '2027-06-09T13:30:00Z', '2027-06-09T14:00Z'], // Wed 08:30 CDT → 09:00
    ['US-NE', '+14025550100', '2027-06-13T17:00:00Z', '2027-06-13T18:00Z'], // Sun 12:00 CDT → 13:00
    ['US-AL', '+12055550100', '2027-06-13T17:00:00Z', '2027-06-14T13:00Z'], // Sun 12:00 CDT → Mon 08:00
    ['US-AL', '+12055550100', '2027-06-10T01:30:00Z', '2027-06-10T13:00Z'], // Wed 20:30 CDT → Thu 08:00
    ['US-AL', '+12055550100', '2027-04-26T17:00:00Z', '2027-04-27T13:00Z'], // Confederate Memorial Day
    ['US-PA', '+12155550100', '2027-06-12T17:00:00Z', '2027-06-13T12:00Z'], // Sat 13:00 EDT → Sun 08:00
    ['US-PA', '+12155550100', '2027-06-14T16:00:00Z', '2027-06-15T12:00Z'], // Flag Day (Mon) → Tue 08:00
  ] as const;

  it('refuses each state at its own hours, days and holidays, and opens at its next opening', () => {
    for (const [region, phone, when, next] of REFUSED) {
      const v = judgeAt(phone, when);
      expect(v, `${region} ${when}`).toMatchObject({ region, allowed: false });
      expect(v.limitedBy, `${region} ${when}`).toContain(`state:${region}`);
      expect(iso(v.nextAllowedMs), `${region} ${when}`).toBe(next);
      expect(judgeAt(phone, when, false), `${region} ${when} without state rules`).toMatchObject({
        allowed: true,
      });
    }
    expect(judgeAt('+12055550100', '2027-04-26T17:00:00Z').limitedBy).toContain(
      'holiday:US-AL:Confederate Memorial Day',
    );
    expect(judgeAt('+12155550100', '2027-06-14T16:00:00Z').limitedBy).toContain('holiday:US-PA:Flag Day');
    // Saturday morning in Pennsylvania is open; the half holiday starts at noon.
    expect(judgeAt('+12155550100', '2027-06-12T14:00:00Z')).toMatchObject({ allowed: true });
  });

  it('Mississippi on Central Standard Time: 08:00-20:00 local and 08:00-20:00 CST, so 09:00 in summer', () => {
    const jackson = '+16015550100'; // 601: America/Chicago, US-MS
    const summer = judgeAt(jackson, '2027-06-09T13:30:00Z'); // Wednesday 08:30 CDT = 07:30 CST
    expect(summer).toMatchObject({ region: 'US-MS', allowed: false, closedBy: ['clock:Etc/GMT+6'] });
    expect(iso(summer.nextAllowedMs)).toBe('2027-06-09T14:00Z'); // 09:00 CDT = 08:00 CST
    expect(judgeAt(jackson, '2027-06-09T13:30:00Z', false)).toMatchObject({ allowed: true });
    // In winter the two clocks agree: 08:00 CST opens.
    const winter = judgeAt(jackson, '2027-01-13T13:30:00Z'); // Wednesday 07:30 CST
    expect(iso(winter.nextAllowedMs)).toBe('2027-01-13T14:00Z');
    expect(judgeAt(jackson, '2027-01-13T14:00:00Z')).toMatchObject({ allowed: true });
    // The evening end: local 20:00 is the narrower one in summer (21:00 CDT is 20:00 CST).
    expect(judgeAt(jackson, '2027-06-10T01:00:00Z')).toMatchObject({ allowed: false }); // 20:00 CDT
    expect(judgeAt(jackson, '2027-06-10T00:59:00Z')).toMatchObject({ allowed: true }); // 19:59 CDT
  });

  it("Maine's one automated call per 8 hours: one attempt per rolling 24 h", () => {
    const portland = judgeAt('+12075550100', '2027-06-09T16:00:00Z'); // Wed 12:00 EDT
    expect(portland).toMatchObject({ region: 'US-ME', allowed: true, attemptsPer24h: 1 });
    expect(judgeAt('+12075550100', '2027-06-09T16:00:00Z', false).attemptsPer24h).toBeNull();
  });
});
