import { SLOTS_CACHE_MAX_BYTES_PER_FIRM } from '../../../core/domain/appointments/availability.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { scanAll } from '../../../core/platform/redis-cluster.js';
import { lockHolderPid } from '../../../core/platform/redis-mutex.js';
import type { Cluster } from '../cluster.js';
import { usedMemory } from '../faults.js';
import { row, type Row } from './rows.js';
import type { CallFacts, CheckContext } from './context.js';

/** Redis: no lock, dial slot or waiter left, memory back near its start. */
export async function redisRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { cluster, ledger } = ctx;
  const { callFirms } = facts;
  const rows: Row[] = [];
  const keys = cluster.keys;
  const locks = await leftoverLocks(cluster, keys.anyLock(), new Set(ledger.killedPids));
  let slots = 0;
  let waiting = 0;
  for (const firm of callFirms) {
    slots += await cluster.redis.zcard(keys.dialSlots(firm));
    waiting += await cluster.redis.zcard(keys.dialWaiters(firm));
    waiting += await cluster.redis.zcard(keys.dialWaking(firm));
  }
  const ofKilled =
    locks.ofKilled === 0
      ? ''
      : ` (+ ${locks.ofKilled} of a SIGKILLed worker, expiring within ${locks.expiringS} s)`;
  rows.push(
    row(
      'no record lock, dial slot or dial waiter left over',
      '0 locks, 0 slots, 0 waiters',
      `${locks.left.length} locks${locks.left.length === 0 ? '' : `: ${locks.left.slice(0, 3).join(', ')}`}` +
        `${ofKilled}, ${slots} slots, ${waiting} waiters`,
      locks.left.length === 0 && slots === 0 && waiting === 0,
    ),
  );
  const end = await usedMemory(cluster);
  ledger.redisMemory.end = end ?? undefined;
  const start = ledger.redisMemory.start ?? 0;
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  rows.push(
    row(
      'Redis memory back near its start',
      `≤ start + ${mib(ctx.redisGrowthBudget)}`,
      `${mib(start)} → peak ${mib(ledger.redisMemory.peak)} → ${mib(end ?? -1)}` +
        (ledger.redisMemory.max === undefined ? '' : ` (maxmemory ${mib(ledger.redisMemory.max)})`),
      end !== null && end - start <= ctx.redisGrowthBudget,
    ),
  );
  const flood = ledger.availabilityFlood;
  if (flood !== undefined) {
    const counts = new Map<number, number>();
    for (const status of flood.statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
    const answered = [...counts].map(([status, n]) => `${n}× ${status}`).join(', ');
    rows.push(
      row(
        "the availability flood: answered 200 or 502, the firm's slot cache within its bound",
        `200/502 only; ≤ 1 key, ≤ ${mib(SLOTS_CACHE_MAX_BYTES_PER_FIRM * 2)}`,
        `${answered}; ${flood.cacheKeys} key, ${mib(flood.cacheBytes)}`,
        flood.statuses.every((s) => s === 200 || s === 502) &&
          flood.cacheKeys <= 1 &&
          flood.cacheBytes <= SLOTS_CACHE_MAX_BYTES_PER_FIRM * 2,
      ),
    );
  }
  return rows;
}

/** How long a live process's lock must stay held, by the same holder, to count as left over. */
const HELD_FOR_MS = 3_000;

/**
 * The record locks still in Redis. A worker killed while it held one leaves it until its TTL runs
 * out (that is how its next writer gets it back): such locks are counted apart, as long as they
 * expire. A live process's lock is looked at again after HELD_FOR_MS: one taken for a moment by
 * periodic work is gone or held by a new holder by then. Every other one is named (key, holder,
 * expiry): a live process kept it, or it has no TTL.
 */
async function leftoverLocks(
  cluster: Cluster,
  pattern: string,
  killedPids: ReadonlySet<number>,
): Promise<{ left: string[]; ofKilled: number; expiringS: number }> {
  const live = new Map<string, string>();
  let ofKilled = 0;
  let expiringMs = 0;
  for (const key of await scanAll(cluster.redis, pattern)) {
    const [token, ttlMs] = await Promise.all([cluster.redis.get(key), cluster.redis.pttl(key)]);
    if (token === null) continue; // released (or expired) since the scan
    const pid = lockHolderPid(token);
    if (pid !== undefined && killedPids.has(pid) && ttlMs > 0) {
      ofKilled++;
      expiringMs = Math.max(expiringMs, ttlMs);
    } else live.set(key, token);
  }
  if (live.size > 0) await sleep(HELD_FOR_MS);
  const left: string[] = [];
  for (const [key, token] of live) {
    const [now, ttlMs] = await Promise.all([cluster.redis.get(key), cluster.redis.pttl(key)]);
    if (now !== token) continue; // released, or taken afresh: not held all along
    const name = key.slice(key.indexOf(':lock:') + 1);
    const held = ttlMs > 0 ? `expires in ${(ttlMs / 1000).toFixed(1)} s` : 'no expiry';
    left.push(`${name} (pid ${lockHolderPid(token) ?? '?'}, ${held})`);
  }
  return { left, ofKilled, expiringS: Math.ceil(expiringMs / 1000) };
}
