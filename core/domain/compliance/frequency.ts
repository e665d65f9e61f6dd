import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { FIRST_IN_LINE_MS } from '../pacing/dial-slots.js';

// Frequency caps: at most N dial attempts per number per firm per rolling 24 h, over campaigns,
// retries and direct calls (docs/compliance.md#frequency-caps). A sorted set per firm + number
// holds the attempts' call ids scored by when they were dialled (the gate's clock); the dial
// stage counts an attempt in the same script that takes the firm's dial slot, so a call is
// counted exactly when it is about to be dialled, once (a retried job finds its member).

export const DAY_MS = 86_400_000;

const TAKE = loadRedisScript(new URL('./take-slot-and-attempt.lua', import.meta.url), {
  keys: ['slots', 'waiters', 'firms', 'attempts'],
  args: [
    'member',
    'now',
    'lease_end',
    'max',
    'waiter',
    'firm',
    'place',
    'attempt_now',
    'window_start',
    'cap',
    'ttl_ms',
  ],
});

export interface AttemptCount {
  /** Attempts in the window, this call's included when it was counted. */
  count: number;
  /** The oldest attempt in the window (ms), when any. */
  oldestMs: number | null;
  /** This call is counted already. */
  counted: boolean;
}

/** The attempts of `firm` to `phone` within 24 h of `atMs` (no change). */
export async function peekAttempts(
  services: Services,
  firm: string,
  phone: string,
  callId: string,
  atMs: number,
): Promise<AttemptCount> {
  const key = redisKeys(services.config).dialAttempts(firm, phone);
  return attemptCountOf(
    await services.redis.zrangebyscore(key, `(${atMs - DAY_MS}`, '+inf', 'WITHSCORES'),
    callId,
  );
}

/** The count of a window's attempts, read as ZRANGEBYSCORE … WITHSCORES (member, score, …). */
export function attemptCountOf(rows: readonly string[], callId: string): AttemptCount {
  let oldestMs: number | null = null;
  let counted = false;
  for (let i = 0; i < rows.length; i += 2) {
    if (rows[i] === callId) counted = true;
    const score = Number(rows[i + 1]);
    if (oldestMs === null || score < oldestMs) oldestMs = score;
  }
  return { count: rows.length / 2, oldestMs, counted };
}

export type SlotAndAttempt =
  | { kind: 'taken'; count: number }
  | { kind: 'no_slot'; count: number }
  | { kind: 'capped'; count: number; oldestMs: number };

/**
 * Takes a dial slot of `firm` for `callId` and counts its attempt to `phone`, atomically: the
 * slot is taken only when the cap allows the attempt, and the attempt counted only with the slot.
 */
export async function takeSlotAndAttempt(
  services: Services,
  input: {
    firm: string;
    /** The firm's max_concurrent_calls. */
    max: number;
    phone: string;
    callId: string;
    waiter: string;
    atMs: number;
    cap: number;
  },
): Promise<SlotAndAttempt> {
  const keys = redisKeys(services.config);
  const now = Date.now();
  const max = input.max;
  const [kind, oldest, count] = (await TAKE.run(
    services.redis,
    {
      slots: keys.dialSlots(input.firm),
      waiters: keys.dialWaiters(input.firm),
      firms: keys.pacingFirms(input.firm),
      attempts: keys.dialAttempts(input.firm, input.phone),
    },
    {
      member: input.callId,
      now,
      lease_end: now + services.config.dialSlotLeaseMs,
      max,
      waiter: input.waiter,
      firm: input.firm,
      // Asked for now (create-outbound-call or a campaign call already registered): first in line.
      place: now - FIRST_IN_LINE_MS,
      attempt_now: input.atMs,
      window_start: input.atMs - DAY_MS,
      cap: input.cap,
      ttl_ms: DAY_MS,
    },
  )) as [number, string | null, number];
  if (kind === 1) return { kind: 'taken', count };
  if (kind === 0) return { kind: 'no_slot', count };
  return { kind: 'capped', count, oldestMs: Number(oldest) };
}
