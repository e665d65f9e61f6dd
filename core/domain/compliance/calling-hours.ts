// Calling hours in the callee's time (a first, minimal version: the default hours in the lead's
// time zone, else the firm's, and the firm's calling window; the full version judges every
// possible zone of the number and applies state rules).

import { insideWindow, nextCallTime, type CallingWindow } from '../pacing/calling-window.js';
import { localTime } from '../../platform/time-zone.js';

export interface HoursPolicy {
  start: string;
  end: string;
}
export interface ZoneCheck {
  zone: string;
  local: string;
  allowed: boolean;
}
export interface HoursVerdict {
  allowed: boolean;
  /** Earliest instant >= atMs when every zone (and the firm's window) allows a call; null: none within 8 days. */
  nextAllowedMs: number | null;
  zones: ZoneCheck[];
  /** The number's region when known, e.g. "US-FL", "US-AZ", "GB"; null when unknown. */
  region: string | null;
  /** What limited the hours: "default", "state:US-FL", "firm_window", "lead_timezone". */
  limitedBy: string[];
  /** A state's lower cap of dial attempts per rolling 24 h, when state rules apply; else null. */
  attemptsPer24h: number | null;
  /** The rules' version for the audit: the data file's effective date and a short hash. */
  rulesVersion: string;
}

const EVERY_DAY = [1, 2, 3, 4, 5, 6, 7];
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const pad = (n: number): string => String(n).padStart(2, '0');

function localText(ms: number, zone: string): string {
  const t = localTime(ms, zone);
  const weekday = new Date(Date.UTC(t.year, t.month - 1, t.day)).getUTCDay();
  return `${t.year}-${pad(t.month)}-${pad(t.day)} ${pad(t.hour)}:${pad(t.minute)} (${WEEKDAYS[(weekday + 6) % 7]})`;
}

export function judgeHours(input: {
  phone: string;
  leadTimeZone?: string | null;
  firmTimeZone: string;
  firmWindow?: CallingWindow | null;
  atMs: number;
  hours: HoursPolicy;
  stateRules: boolean;
}): HoursVerdict {
  const zone = input.leadTimeZone ?? input.firmTimeZone;
  const hours: CallingWindow = { start: input.hours.start, end: input.hours.end, days: EVERY_DAY };
  const wholeDay = input.hours.start === '00:00' && input.hours.end === '24:00';
  const windows: { window: CallingWindow; zone: string }[] = wholeDay ? [] : [{ window: hours, zone }];
  if (input.firmWindow) windows.push({ window: input.firmWindow, zone }); // in the lead's zone when known, as before
  const inside = (ms: number) => windows.every((w) => insideWindow(w.window, w.zone, ms));
  let next: number | null = input.atMs;
  // The first instant every window allows: move to each one's next opening until all agree.
  for (let i = 0; i < 32 && next !== null && !inside(next); i++) {
    for (const w of windows) {
      if (next === null) break;
      const opens: number | null = nextCallTime(w.window, w.zone, next);
      next = opens === null || opens - input.atMs > 8 * 86_400_000 ? null : opens;
    }
  }
  if (next !== null && !inside(next)) next = null;
  const allowed = next === input.atMs;
  const limitedBy = ['default'];
  if (input.leadTimeZone) limitedBy.push('lead_timezone');
  if (input.firmWindow) limitedBy.push('firm_window');
  return {
    allowed,
    nextAllowedMs: next,
    zones: [
      {
        zone,
        local: localText(input.atMs, zone),
        allowed: wholeDay || insideWindow(hours, zone, input.atMs),
      },
    ],
    region: null,
    limitedBy,
    attemptsPer24h: null,
    rulesVersion: 'minimal',
  };
}
