import { SLOTS_CACHE_MAX_BYTES_PER_FIRM } from '../../../core/domain/appointments/availability.js';
import { scanAll } from '../../../core/platform/redis-cluster.js';
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
  const locks = await scanCount(cluster, keys.anyLock());
  let slots = 0;
  let waiting = 0;
  for (const firm of callFirms) {
    slots += await cluster.redis.zcard(keys.dialSlots(firm));
    waiting += await cluster.redis.zcard(keys.dialWaiters(firm));
    waiting += await cluster.redis.zcard(keys.dialWaking(firm));
  }
  rows.push(
    row(
      'no record lock, dial slot or dial waiter left over',
      '0 locks, 0 slots, 0 waiters',
      `${locks} locks, ${slots} slots, ${waiting} waiters`,
      locks === 0 && slots === 0 && waiting === 0,
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

async function scanCount(cluster: Cluster, pattern: string): Promise<number> {
  return (await scanAll(cluster.redis, pattern)).length;
}
