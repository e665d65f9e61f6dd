import type { Services } from '../../wiring/services.js';
import { defineRedisScript } from '../../platform/redis-script.js';
import { getFirm } from '../firms/firms.js';
import { DEFAULT_SETTINGS } from '../firms/firm-settings.js';
import { promoteParked } from './parking.js';

// Pacing: at most a firm's max_concurrent_calls calls of that firm in progress at once, for
// every dial the service makes (create-outbound-call and campaigns alike). A slot is a member
// of a per-firm sorted set — the call id, scored by when its lease runs out — taken before the
// dial and released by the call's end (call_ended, or a not_connected/error outcome). The lease
// frees a slot whose end event was lost. Jobs that find no slot park (core/domain/pacing/
// parking.ts) in the firm's waiter set and are woken, oldest first, as slots free up; other
// firms' jobs never wait behind them.

const slotsKey = (services: Services, firm: string) => `${services.config.queuePrefix}:pacing:${firm}:slots`;
const waitersKey = (services: Services, firm: string) =>
  `${services.config.queuePrefix}:pacing:${firm}:waiters`;
/**
 * Waiters popped for a free slot whose promotion is under way, scored by when that wake-up counts
 * as lost: a worker that dies between the pop and the promotion would otherwise leave its jobs
 * delayed for their whole safety delay (15 minutes) while slots stand free. The reaper wakes them.
 */
const wakingKey = (services: Services, firm: string) =>
  `${services.config.queuePrefix}:pacing:${firm}:waking`;
/** How long a wake-up may take before the reaper takes it over. */
const WAKE_LEASE_MS = 10_000;
/** The firms that have parked jobs (the reaper's list). */
const firmsKey = (services: Services) => `${services.config.queuePrefix}:pacing:firms`;

/**
 * KEYS: slots, waiters, firms. ARGV: member, now, lease end, max, waiter ref ('' for none), firm,
 * the waiter's place in line (lowest first).
 * Frees expired leases; a member that holds a slot keeps it (its lease renewed); else it takes a
 * free one; else its waiter ref joins the firm's waiters (keeping its place). 1 = slot held.
 */
const TAKE = defineRedisScript(`
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  if ARGV[5] ~= '' then redis.call('ZREM', KEYS[2], ARGV[5]) end
  return 1
end
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[2], 'NX', tonumber(ARGV[7]), ARGV[5])
  redis.call('SADD', KEYS[3], ARGV[6])
end
return 0
`);

/**
 * KEYS: slots, waiters, firms, waking. ARGV: member to release ('' for none), now, max, firm,
 * wake lease end.
 * Releases the member, frees expired leases, and pops as many waiters as there are free slots
 * (first in line first) into the waking set: the caller promotes them, then clears them from it.
 * Returns [ref, place, ref, place, ...].
 */
const RELEASE_AND_WAKE = defineRedisScript(`
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]))
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local woken = {}
if free > 0 then woken = redis.call('ZPOPMIN', KEYS[2], free) end
for i = 1, #woken, 2 do redis.call('ZADD', KEYS[4], tonumber(ARGV[5]), woken[i]) end
if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[4])
end
return woken
`);

/** The firm's max_concurrent_calls (the default for a firm that is gone). */
async function maxConcurrentCalls(services: Services, firm: string): Promise<number> {
  const doc = await getFirm(services.mongo.db, firm);
  return doc?.settings.max_concurrent_calls ?? DEFAULT_SETTINGS.max_concurrent_calls;
}

/** Waiters of the `first` class go before every other waiter (their place: time minus this). */
const FIRST_IN_LINE_MS = 1e12;

/**
 * Takes (or keeps, renewing its lease) a dial slot of `firm` for the call `callId`. False when
 * the firm is at its limit: then `waiter` (a parked job's reference, see parking.ts) has joined
 * the firm's waiters and is woken when a slot frees — oldest first, but a `first` waiter (a call
 * someone asked for now, create-outbound-call) before any campaign lead.
 */
export async function takeDialSlot(
  services: Services,
  firm: string,
  callId: string,
  waiter: string,
  line: 'first' | 'queue' = 'queue',
): Promise<boolean> {
  const now = Date.now();
  const max = await maxConcurrentCalls(services, firm);
  const place = line === 'first' ? now - FIRST_IN_LINE_MS : now;
  const taken = await TAKE.run(
    services.redis,
    [slotsKey(services, firm), waitersKey(services, firm), firmsKey(services)],
    [callId, now, now + services.config.dialSlotLeaseMs, max, waiter, firm, place],
  );
  return taken === 1;
}

/** Pops waiters for the free slots of `firm` and promotes them. */
async function wake(services: Services, firm: string): Promise<number> {
  const max = await maxConcurrentCalls(services, firm);
  const popped = await popWaiters(services, firm, max);
  if (popped.length === 0) return 0;
  const places = new Map<string, string>();
  for (let i = 0; i < popped.length; i += 2) places.set(popped[i]!, popped[i + 1]!);
  const woken = await promoteParked(services, [...places.keys()], async (ref) => {
    await services.redis.zadd(waitersKey(services, firm), 'NX', places.get(ref) ?? Date.now(), ref);
    await services.redis.sadd(firmsKey(services), firm);
  });
  await services.redis.zrem(wakingKey(services, firm), ...places.keys());
  return woken;
}

/**
 * The first half of a wake-up: pops as many waiters of `firm` as it has free slots (below `max`)
 * into the waking set; returns [ref, place, ...]. Exported for tests (a worker dying right after it).
 */
export async function popWaiters(services: Services, firm: string, max: number): Promise<string[]> {
  const keys = [
    slotsKey(services, firm),
    waitersKey(services, firm),
    firmsKey(services),
    wakingKey(services, firm),
  ];
  const now = Date.now();
  return (await RELEASE_AND_WAKE.run(services.redis, keys, [
    '',
    now,
    max,
    firm,
    now + WAKE_LEASE_MS,
  ])) as string[];
}

/** Wake-ups that a dead worker left half done: their jobs are promoted now. */
async function rewakeLost(services: Services, firm: string): Promise<number> {
  const key = wakingKey(services, firm);
  const lost = await services.redis.zrangebyscore(key, '-inf', String(Date.now()));
  if (lost.length === 0) return 0;
  // A job still active by now has found its way, or parks itself again: nothing to hand back.
  const woken = await promoteParked(services, lost, async () => undefined);
  await services.redis.zrem(key, ...lost);
  return woken;
}

/**
 * The call ended (or will never be dialled): its slot is free, and the oldest waiter is woken.
 * A slot already released (a repeated event) wakes no one again.
 */
export async function releaseDialSlot(services: Services, firm: string, callId: string): Promise<void> {
  if ((await services.redis.zrem(slotsKey(services, firm), callId)) === 0) return;
  await wake(services, firm);
}

/**
 * A job that will not dial now (its campaign is paused or over, its lead outside the calling
 * window): frees the slot it may hold, and passes its turn on — it may have been woken for a
 * free slot, which would otherwise stay unused while others wait.
 */
export async function passDialTurn(services: Services, firm: string, callId: string): Promise<void> {
  await services.redis.zrem(slotsKey(services, firm), callId);
  await wake(services, firm);
}

/** Wakes as many waiters as `firm` has free slots (a parked job's second look; the reaper). */
export async function wakeDialWaiters(services: Services, firm: string): Promise<number> {
  return wake(services, firm);
}

/**
 * For every firm with parked jobs: finishes wake-ups a dead worker left half done, frees the
 * slots whose lease ran out (their end event never came) and wakes waiters for the free slots.
 * Run every 30 s by the maintenance queue.
 */
export async function reapDialSlots(services: Services): Promise<{ firms: number; woken: number }> {
  const firms = await services.redis.smembers(firmsKey(services));
  let woken = 0;
  for (const firm of firms)
    woken += (await rewakeLost(services, firm)) + (await wakeDialWaiters(services, firm));
  return { firms: firms.length, woken };
}

/** The calls holding a slot of `firm` now (tests, operators). */
export async function dialSlotsInUse(services: Services, firm: string): Promise<string[]> {
  return services.redis.zrangebyscore(slotsKey(services, firm), Date.now(), '+inf');
}
