// When each step of a worker's stop must be over, all counted back from one deadline: the
// signal's time + SHUTDOWN_TIMEOUT_MS, after which the process exits 1 whatever is left
// (core/platform/process.ts). Whatever a step waits on (the webhook outbox's drain, a slow
// job, a hung connection), the next step starts on time, so the hand-back always happens.

/** The moments of one stop (ms since epoch). */
export interface StopSchedule {
  /** Until then running jobs may finish; then no effect may begin (effect-gate.ts). */
  graceEnd: number;
  /** Until then an effect under way may finish its request and record it; then the rest is handed back. */
  handBack: number;
  /** Closing connections is given up then (nothing is owned any more); the spans are sent last. */
  closeBy: number;
  deadline: number;
}

/** The reserves before the deadline at SHUTDOWN_TIMEOUT_MS ≥ 6 s; a shorter timeout scales them down. */
const GRACE_RESERVE_MS = 5000;
const HAND_BACK_RESERVE_MS = 2000;
const CLOSE_RESERVE_MS = 500;
const FULL_RESERVES_FROM_MS = 6000;

export function stopSchedule(deadline: number, timeoutMs: number): StopSchedule {
  const scale = Math.min(1, timeoutMs / FULL_RESERVES_FROM_MS);
  return {
    graceEnd: deadline - GRACE_RESERVE_MS * scale,
    handBack: deadline - HAND_BACK_RESERVE_MS * scale,
    closeBy: deadline - CLOSE_RESERVE_MS * scale,
    deadline,
  };
}

/** Resolves with `promise`'s value, or with `late` if `at` (ms since epoch) comes first. */
export async function byTime<T, L>(promise: Promise<T>, at: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<L>((resolve) => (timer = setTimeout(() => resolve(late), Math.max(0, at - Date.now())))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
