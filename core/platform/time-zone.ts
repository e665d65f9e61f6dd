/** True for an IANA time zone name this runtime knows, e.g. "America/New_York". */
export function isTimeZone(name: string): boolean {
  if (name.length === 0 || name.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

// Wall-clock arithmetic in IANA zones with Intl only (no zone database of our own).

export interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/**
 * One formatter per zone and kind, kept: building an Intl.DateTimeFormat costs far more than
 * formatting with one. The zones are IANA names Intl knows (an unknown one throws before it is
 * kept), so the maps stay small.
 */
function keptFormatter(
  kept: Map<string, Intl.DateTimeFormat>,
  timeZone: string,
  options: Intl.DateTimeFormatOptions,
): Intl.DateTimeFormat {
  let f = kept.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { ...options, timeZone });
    kept.set(timeZone, f);
  }
  return f;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const formatter = (timeZone: string): Intl.DateTimeFormat =>
  keptFormatter(formatters, timeZone, {
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });

function partsAt(ms: number, timeZone: string): LocalTime {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(ms)) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return {
    year: parts.year ?? 1970,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: (parts.hour ?? 0) % 24,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
}

// A zone's offset from UTC is asked of Intl once per zone and quarter hour, then kept: every
// offset change of today's rules falls on a quarter hour of UTC (zones are whole, half or
// three-quarter hours off UTC and change at a local hour or half hour), so the offset at the
// quarter's start holds for the whole quarter. Intl's formatToParts was most of the dial gate's
// time (it judges every zone a number may be in, at several instants).
const OFFSET_BUCKET_MS = 15 * 60_000;
const OFFSETS_KEPT = 50_000;
const offsets = new Map<string, number>();

function offsetAt(ms: number, timeZone: string): number {
  const bucket = Math.floor(ms / OFFSET_BUCKET_MS) * OFFSET_BUCKET_MS;
  const key = `${timeZone} ${bucket}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const p = partsAt(bucket, timeZone);
    offset = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - bucket;
    if (offsets.size >= OFFSETS_KEPT) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/** The wall-clock time at `ms` in `timeZone`. */
export function localTime(ms: number, timeZone: string): LocalTime {
  const at = Math.floor(ms);
  const d = new Date(at + offsetAt(at, timeZone));
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
  };
}

/**
 * The instant at which `timeZone` shows the given wall-clock time (the offset found by asking
 * Intl and correcting; a time skipped by a daylight-saving change comes out an hour off, which
 * is then the first moment the window is open).
 */
export function zonedTimeToUtc(
  date: { year: number; month: number; day: number },
  minutes: number,
  timeZone: string,
): number {
  const wanted = Date.UTC(date.year, date.month - 1, date.day, Math.floor(minutes / 60), minutes % 60);
  let guess = wanted;
  for (let i = 0; i < 3; i++) {
    const t = localTime(guess, timeZone);
    const shown = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
    if (shown === wanted) return guess;
    guess += wanted - shown;
  }
  return guess;
}

/** The date (YYYY-MM-DD) of an instant in a time zone. */
export function dateIn(ms: number, timeZone: string): string {
  const t = localTime(ms, timeZone);
  return `${t.year}-${String(t.month).padStart(2, '0')}-${String(t.day).padStart(2, '0')}`;
}

/** The first instant (UTC ms) of `date` (YYYY-MM-DD) in `timeZone`. */
export function startOfDayIn(date: string, timeZone: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  let ms = zonedTimeToUtc({ year, month, day }, 0, timeZone);
  // A day that starts after a gap (no local midnight) starts at the first instant of that date.
  while (dateIn(ms, timeZone) < date) ms += 15 * 60_000;
  while (dateIn(ms - 1, timeZone) === date) ms -= 15 * 60_000;
  return ms;
}

// Mails and Slack posts format a time each (it was 2 % of the worker's CPU with a new formatter each).
const readableFormatters = new Map<string, Intl.DateTimeFormat>();

/** An instant as a person reads it in a zone, for mails and messages: "Nov 28, 2026, 9:05 PM EST". */
export function readableTime(at: Date, timeZone: string): string {
  return keptFormatter(readableFormatters, timeZone, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    timeZoneName: 'short',
  }).format(at);
}
