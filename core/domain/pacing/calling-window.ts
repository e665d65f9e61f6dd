// The firm's calling window (settings.calling_window {start, end, days};
// docs/campaigns.md#calling-window) read in a time zone with Intl only: `days` are ISO weekdays (1 =
// Monday … 7 = Sunday) of the day a window opens; an `end` before `start` is a window over midnight
// (22:00–06:00), an `end` equal to `start` a whole day. Campaign calls are placed only inside it; one due
// outside waits.

import { localTime, zonedTimeToUtc } from '../../platform/time-zone.js';

export interface CallingWindow {
  start: string;
  end: string;
  days: readonly number[];
}

/** ISO weekday (1 = Monday … 7 = Sunday) of a calendar date. */
function isoWeekday(year: number, month: number, day: number): number {
  const sundayFirst = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  return sundayFirst === 0 ? 7 : sundayFirst;
}

const minutesOf = (hhmm: string): number => {
  const [h, m] = hhmm.split(':').map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
};

/** Whether `ms` falls inside the window in `timeZone`. */
export function insideWindow(window: CallingWindow, timeZone: string, ms: number): boolean {
  const t = localTime(ms, timeZone);
  const now = t.hour * 60 + t.minute;
  const start = minutesOf(window.start);
  const end = minutesOf(window.end);
  const days = new Set(window.days);
  const today = isoWeekday(t.year, t.month, t.day);
  if (start === end) return days.has(today);
  if (start < end) return days.has(today) && now >= start && now < end;
  const yesterday = today === 1 ? 7 : today - 1;
  return (days.has(today) && now >= start) || (days.has(yesterday) && now < end);
}

/**
 * When a call due at `ms` may be placed: `ms` itself inside the window, else the next time the
 * window opens in `timeZone` (null only for a window with no days, which settings refuse).
 */
export function nextCallTime(window: CallingWindow, timeZone: string, ms: number): number | null {
  if (insideWindow(window, timeZone, ms)) return ms;
  const t = localTime(ms, timeZone);
  const start = minutesOf(window.start);
  const days = new Set(window.days);
  for (let k = 0; k <= 8; k++) {
    const d = new Date(Date.UTC(t.year, t.month - 1, t.day + k));
    const date = { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
    if (!days.has(isoWeekday(date.year, date.month, date.day))) continue;
    const opens = zonedTimeToUtc(date, start, timeZone);
    if (opens > ms) return opens;
  }
  return null;
}
