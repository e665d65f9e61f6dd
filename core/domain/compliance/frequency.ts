import { randomUUID } from 'node:crypto';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { FIRST_IN_LINE_MS } from '../pacing/dial-slots.js';
import { clock } from '../../platform/clock.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { dialDecisionsCollection } from './dial-decisions.js';
import { askForRebuild } from './rebuild-asks.js';

// Frequency caps: at most N dial attempts per number per firm per rolling 24 h, over campaigns,
// retries and direct calls (docs/compliance.md#frequency-caps). A sorted set per firm + number
// holds the attempts' call ids scored by when they were dialled (the gate's clock); the dial
// stage counts an attempt in the same script that takes the firm's dial slot, so a call is
// counted exactly when it is about to be dialled, once (a retried job finds its member).
//
// Redis can lose its data (a restart without persistence, a new instance, a flush): the counts
// would then start again from nothing, and a number could be dialled up to the cap again within
// its 24 h. Every dial attempt is also a `dial_decisions` record in MongoDB (stage `dial`, answer
// `allow`, written before the dial), so the attempts are rebuilt from those: a firm's ready mark
// (dialAttemptsReady, no expiry) goes with the data; without it the gate first rebuilds the
// number's key from its records (one indexed read of the number's last 24 h), then counts, and
// asks for the firm's rebuild (rebuildFirmAttempts), which sets the mark.

export const DAY_MS = 86_400_000;
const REBUILD_BATCH = 1000;
/** How long a rebuild's token lasts: a rebuild that runs longer does not mark, and runs again. */
const REBUILDING_TTL_MS = 3_600_000;

const TAKE = loadRedisScript(new URL('./take-slot-and-attempt.lua', import.meta.url), {
  keys: ['slots', 'waiters', 'firms', 'attempts', 'ready'],
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
    'check_ready',
  ],
});

const REBUILT = loadRedisScript(new URL('./attempts-rebuilt.lua', import.meta.url), {
  keys: ['ready', 'rebuilding'],
  args: ['token', 'at'],
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
  let reply = await take(services, input, true);
  if (reply[0] === -2) {
    // The firm's attempts are not known to be complete (Redis lost them): this number's first.
    await rebuildNumberAttempts(services, input.firm, input.phone, input.atMs);
    askForAttemptsRebuild(services, input.firm);
    reply = await take(services, input, false);
  }
  const [kind, oldest, count] = reply;
  if (kind === 1) return { kind: 'taken', count };
  if (kind === 0) return { kind: 'no_slot', count };
  return { kind: 'capped', count, oldestMs: Number(oldest) };
}

async function take(
  services: Services,
  input: Parameters<typeof takeSlotAndAttempt>[1],
  checkReady: boolean,
): Promise<[number, string | null, number]> {
  const keys = redisKeys(services.config);
  const now = Date.now();
  const max = input.max;
  return (await TAKE.run(
    services.redis,
    {
      slots: keys.dialSlots(input.firm),
      waiters: keys.dialWaiters(input.firm),
      firms: keys.pacingFirms(input.firm),
      attempts: keys.dialAttempts(input.firm, input.phone),
      ready: keys.dialAttemptsReady(input.firm),
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
      check_ready: checkReady ? '1' : '0',
    },
  )) as [number, string | null, number];
}

/** The dial attempts a firm's decisions record since `sinceMs` (stage `dial`, answer `allow`). */
function recordedAttempts(services: Services, filter: { firm: string; phone?: string }, sinceMs: number) {
  return dialDecisionsCollection(services.mongo.db)
    .find(
      { ...filter, at: { $gt: new Date(sinceMs) }, stage: 'dial', answer: 'allow' },
      { projection: { phone: 1, call_id: 1, at: 1 } },
    )
    .batchSize(REBUILD_BATCH);
}

/**
 * Adds attempts to a number's key: a member already there keeps the later of its two times
 * (GT: a call dialled again later is scored by that dial, which its record does not hold).
 */
async function addAttempts(
  services: Services,
  firm: string,
  phone: string,
  attempts: ReadonlyArray<{ call_id: string; at: Date }>,
): Promise<void> {
  if (attempts.length === 0) return;
  const key = redisKeys(services.config).dialAttempts(firm, phone);
  const scored = attempts.flatMap((a) => [a.at.getTime(), a.call_id]);
  await services.redis
    .multi()
    .zadd(key, 'GT', ...scored)
    .pexpire(key, DAY_MS)
    .exec();
}

/** Puts the number's recorded attempts of the 24 h before `atMs` back into its key. */
export async function rebuildNumberAttempts(
  services: Services,
  firm: string,
  phone: string,
  atMs: number,
): Promise<void> {
  await addAttempts(
    services,
    firm,
    phone,
    await recordedAttempts(services, { firm, phone }, atMs - DAY_MS).toArray(),
  );
}

/**
 * Puts every attempt the firm's decisions record for the last 24 h back into Redis (one cursor
 * over the firm's decisions of that day, by its index), then sets the firm's ready mark. Attempts
 * counted meanwhile by the gate are in their keys already; what this adds only joins them. The
 * mark is set only if Redis kept its data while this ran (its token, attempts-rebuilt.lua): after a
 * loss meanwhile the attempts put back before it are gone, and the rebuild fails, to run again.
 */
export async function rebuildFirmAttempts(services: Services, firm: string): Promise<{ attempts: number }> {
  const keys = redisKeys(services.config);
  const token = randomUUID();
  await services.redis.set(keys.dialAttemptsRebuilding(firm), token, 'PX', REBUILDING_TTL_MS);
  const byPhone = new Map<string, Array<{ call_id: string; at: Date }>>();
  let attempts = 0;
  const flush = async () => {
    for (const [phone, list] of byPhone) await addAttempts(services, firm, phone, list);
    byPhone.clear();
  };
  for await (const d of recordedAttempts(services, { firm }, clock.now() - DAY_MS)) {
    const list = byPhone.get(d.phone) ?? [];
    list.push({ call_id: d.call_id, at: d.at });
    byPhone.set(d.phone, list);
    attempts += 1;
    if (attempts % REBUILD_BATCH === 0) await flush();
  }
  await flush();
  const marked = await REBUILT.run(
    services.redis,
    { ready: keys.dialAttemptsReady(firm), rebuilding: keys.dialAttemptsRebuilding(firm) },
    { token, at: new Date().toISOString() },
  );
  if (marked !== 1) {
    throw new Error(
      `Redis lost its data while the dial attempts of ${firm} were rebuilt (or another rebuild began): not marked complete`,
    );
  }
  return { attempts };
}

/** Asks a worker for the firm's rebuild (rebuild-asks.ts: once in a while per process). */
export function askForAttemptsRebuild(services: Services, firm: string): void {
  askForRebuild(
    services,
    redisKeys(services.config).dialAttemptsReady(firm),
    () => enqueue(services.queues, JOBS.rebuildDialAttempts, { firm }),
    'the dial attempts',
  );
}
