import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
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

const keys = (services: Services) => redisKeys(services.config);
const slotsKey = (services: Services, firm: string) => keys(services).dialSlots(firm);
const waitersKey = (services: Services, firm: string) => keys(services).dialWaiters(firm);
/**
 * Waiters popped for a free slot whose promotion is under way, scored by when that wake-up counts
 * as lost: a worker that dies between the pop and the promotion would otherwise leave its jobs
 * delayed for their whole safety delay (15 minutes) while slots stand free. The reaper wakes them.
 */
const wakingKey = (services: Services, firm: string) => keys(services).dialWaking(firm);
/** How long a wake-up may take before the reaper takes it over. */
const WAKE_LEASE_MS = 10_000;
/** The firms that have parked jobs: the reaper's list `firm` belongs to (one of several on a cluster). */
const firmsKey = (services: Services, firm: string) => keys(services).pacingFirms(firm);

const TAKE = loadRedisScript(new URL('./take-dial-slot.lua', import.meta.url), {
  keys: ['slots', 'waiters', 'firms'],
  args: ['member', 'now', 'lease_end', 'max', 'waiter', 'firm', 'place'],
});
const RELEASE = loadRedisScript(new URL('./release-dial-slot.lua', import.meta.url), {
  keys: ['slots', 'waiters', 'firms', 'waking'],
  args: ['member', 'firm'],
});
const RELEASE_AND_WAKE = loadRedisScript(new URL('./release-and-wake.lua', import.meta.url), {
  keys: ['slots', 'waiters', 'firms', 'waking'],
  args: ['member', 'now', 'max', 'firm', 'wake_lease_end'],
});

/** The firm's max_concurrent_calls (the default for a firm that is gone). */
export async function maxConcurrentCalls(services: Services, firm: string): Promise<number> {
  const doc = await getFirm(services.mongo.db, firm);
  return doc?.settings.max_concurrent_calls ?? DEFAULT_SETTINGS.max_concurrent_calls;
}

/** Waiters of the `first` class go before every other waiter (their place: time minus this). */
export const FIRST_IN_LINE_MS = 1e12;

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
    { slots: slotsKey(services, firm), waiters: waitersKey(services, firm), firms: firmsKey(services, firm) },
    { member: callId, now, lease_end: now + services.config.dialSlotLeaseMs, max, waiter, firm, place },
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
    await services.redis.sadd(firmsKey(services, firm), firm);
  });
  await services.redis.zrem(wakingKey(services, firm), ...places.keys());
  return woken;
}

/**
 * The first half of a wake-up: pops as many waiters of `firm` as it has free slots (below `max`)
 * into the waking set; returns [ref, place, ...]. Exported for tests (a worker dying right after it).
 */
export async function popWaiters(services: Services, firm: string, max: number): Promise<string[]> {
  const keys = {
    slots: slotsKey(services, firm),
    waiters: waitersKey(services, firm),
    firms: firmsKey(services, firm),
    waking: wakingKey(services, firm),
  };
  const now = Date.now();
  const args = { member: '', now, max, firm, wake_lease_end: now + WAKE_LEASE_MS };
  return (await RELEASE_AND_WAKE.run(services.redis, keys, args)) as string[];
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
  // One round trip; the firm's limit (a read of the firm) only when someone waits for the slot.
  const released = await RELEASE.run(
    services.redis,
    {
      slots: slotsKey(services, firm),
      waiters: waitersKey(services, firm),
      firms: firmsKey(services, firm),
      waking: wakingKey(services, firm),
    },
    { member: callId, firm },
  );
  if (Number(released) === 1) await wake(services, firm);
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
 * Run every DIAL_SLOT_REAP_MS (30 s) by the maintenance queue.
 */
export async function reapDialSlots(services: Services): Promise<{ firms: number; woken: number }> {
  const firms: string[] = [];
  for (const list of keys(services).pacingFirmLists()) firms.push(...(await services.redis.smembers(list)));
  let woken = 0;
  for (const firm of firms)
    woken += (await rewakeLost(services, firm)) + (await wakeDialWaiters(services, firm));
  return { firms: firms.length, woken };
}

/** The calls holding a slot of `firm` now (tests, operators). */
export async function dialSlotsInUse(services: Services, firm: string): Promise<string[]> {
  return services.redis.zrangebyscore(slotsKey(services, firm), Date.now(), '+inf');
}
