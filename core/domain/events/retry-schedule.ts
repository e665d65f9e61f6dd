// When a failed webhook delivery is tried again (docs/events.md#retries): the configured waits
// (WEBHOOK_RETRY_SCHEDULE, by default 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: about a day and a
// half of retries over three days of calendar), each with ±20 % jitter so that the retries of many
// deliveries failed by one outage do not come back at the same instant; a `Retry-After` longer
// than the wait is honoured (up to a day). Past the last wait the delivery is given up.

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `500ms`, `5s`, `5m`, `2h`, `1d` as milliseconds (the config schema checks the form). */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (m === null) throw new Error(`not a duration: ${text}`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/** `5s,5m,30m` (WEBHOOK_RETRY_SCHEDULE) as milliseconds, repeats kept. */
export const parseSchedule = (text: string | readonly string[]): number[] =>
  (typeof text === 'string' ? text.split(',') : text).map(parseDuration);

/** The longest Retry-After honoured. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * The wait before the retry that follows the `failures`-th failed attempt (1 = the first), or
 * null when the schedule is spent. `random` in [0, 1) gives the jitter.
 */
export function nextRetryDelay(
  schedule: readonly number[],
  failures: number,
  retryAfterMs: number | null,
  random: number = Math.random(),
): number | null {
  const base = schedule[failures - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.8 + 0.4 * random));
  const asked = retryAfterMs === null ? 0 : Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.max(jittered, asked);
}
