// Legal holidays of a state, from the rules in state-rules.json (`holidays` of a region): each
// rule computes its date for any year, and a holiday is also kept on its observed day. A year's
// dates are worked out once, the first time a date of that year is asked about, and kept.
// Synchronous and pure.

/** A holiday rule: exactly one of a fixed date, the nth weekday of a month, or days from Easter. */
export interface HolidayRule {
  name: string;
  /** A fixed date: month (1-12) and day. */
  month?: number;
  day?: number;
  /** The nth (1-5, or -1 for the last) ISO weekday (1 = Monday … 7 = Sunday) of `month`. */
  weekday?: number;
  nth?: number;
  /** Days added to the nth weekday (the Tuesday after the first Monday: +1). */
  offset_days?: number;
  /** Days from Easter Sunday (Good Friday -2, Mardi Gras -47). */
  easter_offset?: number;
  /** Only in some years: from `from`, every `every` years. */
  years?: { from: number; every: number };
  /** Replaces the region's observed days for this holiday; null: none. */
  observed?: Record<string, number> | null;
  cite: string;
  note?: string;
}

export interface HolidayRules {
  statute: { cite: string; url: string };
  note?: string;
  /** ISO weekday the date falls on → days to its observed day. Default: Saturday → Friday, Sunday → Monday. */
  observed?: Record<string, number>;
  days: HolidayRule[];
}

export const DEFAULT_OBSERVED: Record<string, number> = { '6': -1, '7': 1 };
const DAY_MS = 86_400_000;

/** Easter Sunday of a Gregorian year (the anonymous Gregorian algorithm): [month, day]. */
export function easterSunday(year: number): [number, number] {
  const a = year % 19;
  const b = Math.floor(year / 100);
  const c = year % 100;
  const d = Math.floor(b / 4);
  const e = b % 4;
  const f = Math.floor((b + 8) / 25);
  const g = Math.floor((b - f + 1) / 3);
  const h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4);
  const k = c % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  return [month, day];
}

/** ISO weekday (1 = Monday … 7 = Sunday) of a UTC day number (ms / DAY_MS). */
const weekdayOfDay = (dayNumber: number): number => {
  const d = new Date(dayNumber * DAY_MS).getUTCDay();
  return d === 0 ? 7 : d;
};
const dayNumber = (year: number, month: number, day: number): number =>
  Date.UTC(year, month - 1, day) / DAY_MS;

/** The rule's date in `year` as a UTC day number, or null when it has none that year. */
export function holidayDate(rule: HolidayRule, year: number): number | null {
  if (rule.years !== undefined) {
    const { from, every } = rule.years;
    if (year < from || (year - from) % every !== 0) return null;
  }
  if (rule.easter_offset !== undefined) {
    const [month, day] = easterSunday(year);
    return dayNumber(year, month, day) + rule.easter_offset;
  }
  if (rule.month === undefined) return null;
  if (rule.day !== undefined) return dayNumber(year, rule.month, rule.day);
  if (rule.weekday === undefined || rule.nth === undefined) return null;
  let d: number;
  if (rule.nth > 0) {
    const first = dayNumber(year, rule.month, 1);
    d = first + ((rule.weekday - weekdayOfDay(first) + 7) % 7) + (rule.nth - 1) * 7;
    if (new Date(d * DAY_MS).getUTCMonth() !== rule.month - 1) return null; // no 5th weekday
  } else {
    const last = dayNumber(year, rule.month + 1, 1) - 1;
    d = last - ((weekdayOfDay(last) - rule.weekday + 7) % 7);
  }
  return d + (rule.offset_days ?? 0);
}

/**
 * The region's holidays that fall in `year`: the local date (`month * 100 + day`) → its names.
 * A holiday's observed day is named "<name> (observed)". The years either side are worked out too,
 * since an observed day can cross into the year (January 1 on a Saturday is kept on December 31).
 */
export function holidaysOfYear(rules: HolidayRules, year: number): Map<number, string[]> {
  const out = new Map<number, string[]>();
  const add = (d: number, name: string): void => {
    const date = new Date(d * DAY_MS);
    if (date.getUTCFullYear() !== year) return;
    const key = (date.getUTCMonth() + 1) * 100 + date.getUTCDate();
    const names = out.get(key);
    if (names === undefined) out.set(key, [name]);
    else if (!names.includes(name)) names.push(name);
  };
  for (const y of [year - 1, year, year + 1]) {
    for (const rule of rules.days) {
      const d = holidayDate(rule, y);
      if (d === null) continue;
      add(d, rule.name);
      const observed = rule.observed === undefined ? (rules.observed ?? DEFAULT_OBSERVED) : rule.observed;
      const shift = observed?.[String(weekdayOfDay(d))];
      if (shift !== undefined && shift !== 0) add(d + shift, `${rule.name} (observed)`);
    }
  }
  return out;
}

/** Holiday tables by region's rules and year, worked out on first use. */
const tables = new WeakMap<HolidayRules, Map<number, Map<number, string[]>>>();

/** The names of the region's holidays on a local date, or undefined when it is none. */
export function holidayOn(
  rules: HolidayRules,
  year: number,
  month: number,
  day: number,
): string[] | undefined {
  let byYear = tables.get(rules);
  if (byYear === undefined) {
    byYear = new Map();
    tables.set(rules, byYear);
  }
  let table = byYear.get(year);
  if (table === undefined) {
    if (byYear.size >= 64) byYear.clear();
    table = holidaysOfYear(rules, year);
    byYear.set(year, table);
  }
  return table.get(month * 100 + day);
}
