import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, rand, type Stack } from '../helpers/stack.js';
import { DAY_MS, peekAttempts, takeSlotAndAttempt } from '../../core/domain/compliance/frequency.js';
import { redisKeys } from '../../core/platform/redis-keys.js';

// The frequency cap's Redis step on a real Redis: the dial slot and the attempt's count taken
// together, atomically, a repeat counted once, old attempts trimmed, the key expiring in 24 h.

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

const T0 = Date.UTC(2026, 5, 17, 14);
const take = (firm: string, callId: string, atMs: number, max = 100, phone = '+13055550101') =>
  takeSlotAndAttempt(stack.services, { firm, max, phone, callId, waiter: `w-${callId}`, atMs, cap: 3 });

describe('takeSlotAndAttempt', () => {
  it('lets exactly the cap through when many calls to one number race', async () => {
    const firm = `f${rand()}`;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => take(firm, `c${i}`, T0 + i)));
    expect(results.filter((r) => r.kind === 'taken')).toHaveLength(3);
    expect(results.filter((r) => r.kind === 'capped')).toHaveLength(17);
    const slots = await stack.services.redis.zcard(redisKeys(stack.config).dialSlots(firm));
    expect(slots).toBe(3); // no slot without its count
  });

  it('counts a repeated call once, trims attempts older than 24 h and expires the key', async () => {
    const firm = `f${rand()}`;
    expect(await take(firm, 'a', T0)).toEqual({ kind: 'taken', count: 1 });
    expect(await take(firm, 'a', T0)).toEqual({ kind: 'taken', count: 1 });
    expect(await take(firm, 'b', T0 + 10)).toEqual({ kind: 'taken', count: 2 });
    expect(await take(firm, 'c', T0 + 20)).toEqual({ kind: 'taken', count: 3 });
    expect(await take(firm, 'd', T0 + DAY_MS - 1)).toEqual({ kind: 'capped', count: 3, oldestMs: T0 });
    expect(await peekAttempts(stack.services, firm, '+13055550101', 'd', T0 + DAY_MS - 1)).toMatchObject({
      count: 3,
      oldestMs: T0,
      counted: false,
    });
    expect(await take(firm, 'd', T0 + DAY_MS)).toEqual({ kind: 'taken', count: 3 });
    const key = redisKeys(stack.config).dialAttempts(firm, '+13055550101');
    const ttl = await stack.services.redis.pttl(key);
    expect(ttl).toBeGreaterThan(DAY_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(DAY_MS);
  });

  it('a call dialled again later (a retry deferred overnight) counts once, at its latest dial', async () => {
    // Florida's cap of 3: call a is allowed at 19:59:50 (its dial fails), deferred, and dialled
    // again at 08:00 the next day; b and c follow. Until 24 h after a's second dial no fourth call
    // to the number may go, where counting a at its first dial let one go at 19:59:51.
    const firm = `f${rand()}`;
    const first = T0;
    const again = T0 + 12 * 3600_000;
    expect(await take(firm, 'a', first)).toEqual({ kind: 'taken', count: 1 });
    expect(await take(firm, 'a', again)).toEqual({ kind: 'taken', count: 1 });
    expect(await take(firm, 'a', again - 60_000)).toEqual({ kind: 'taken', count: 1 }); // never moved back
    expect(await take(firm, 'b', again + 3600_000)).toEqual({ kind: 'taken', count: 2 });
    expect(await take(firm, 'c', again + 7200_000)).toEqual({ kind: 'taken', count: 3 });
    expect(await take(firm, 'd', first + DAY_MS + 1000)).toEqual({
      kind: 'capped',
      count: 3,
      oldestMs: again,
    });
    expect(await take(firm, 'd', again + DAY_MS)).toEqual({ kind: 'taken', count: 3 });
  });

  it('counts nothing when the firm has no free dial slot (the call waits in line)', async () => {
    const firm = `f${rand()}`;
    expect(await take(firm, 'a', T0, 1, '+12125550101')).toMatchObject({ kind: 'taken' });
    expect(await take(firm, 'b', T0 + 1, 1, '+12125550102')).toEqual({ kind: 'no_slot', count: 0 });
    const waiters = await stack.services.redis.zrange(redisKeys(stack.config).dialWaiters(firm), '0', '-1');
    expect(waiters).toEqual(['w-b']);
  });
});
