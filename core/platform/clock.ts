// The service's clock for decisions that depend on the time of day and on rolling windows (the
// dial gate: calling hours, frequency caps, the audit's `at`; the age of a per-process cache's
// copy, core/platform/cache-version.ts). It is the wall clock; tests shift
// it (`clock.shift(ms)`, `clock.reset()`) to stand at a chosen hour or 24 h later without
// sleeping. Only in-process tests may shift it: nothing in the service does.
// BullMQ delays stay on the wall clock: a deferral until `at` on this clock waits
// `at - clock.now()` real milliseconds (clock.delayUntil).

let offsetMs = 0;

export const clock = {
  now(): number {
    return Date.now() + offsetMs;
  },
  /** Tests: moves the clock by `ms` (cumulative). */
  shift(ms: number): void {
    offsetMs += ms;
  },
  /** Tests: sets the clock to stand at `ms` now. */
  set(ms: number): void {
    offsetMs = ms - Date.now();
  },
  reset(): void {
    offsetMs = 0;
  },
  /** The wall-clock instant at which this clock reads `at` (for BullMQ delays). */
  wallTimeOf(at: number): number {
    return at - offsetMs;
  },
};
