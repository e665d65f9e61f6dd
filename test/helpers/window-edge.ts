import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Limits counted per clock hour or UTC day start afresh at the period's edge: a test that must
 * see one period waits, when fewer than `needMs` are left of it, until the next has begun.
 */
export async function clearOfPeriodEdge(periodMs: number, needMs = 60_000): Promise<void> {
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await sleep(left + 100);
}
