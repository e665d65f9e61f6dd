// Found by the chaos run: a worker SIGKILLed while it woke parked campaign calls for freed dial
// slots (between popping them from the firm's waiters and promoting their delayed jobs) left
// seven leads asleep for their 15-minute safety delay while the firm's slots stood free. The
// popped waiters are now kept in a waking set until promoted, and the reaper (every 30 s) wakes
// those a dead worker left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { popWaiters, reapDialSlots, takeDialSlot } from '../../core/domain/pacing/dial-slots.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

describe('a wake-up cut short by a dying worker', () => {
  it('is finished by the reaper once its lease has run out', async () => {
    const s = stack.services;
    const firm = await createFirm(stack, { max_concurrent_calls: 1 });
    const keys = redisKeys(stack.config);
    // A parked campaign call: its job delayed for the safety delay, its reference in line.
    const parked = await s.queues.campaigns.add(
      'campaign-call',
      { parked: true },
      { jobId: `parked-${firm.slug}`, delay: 15 * 60_000 },
    );
    expect(await takeDialSlot(s, firm.slug, 'call_busy', 'campaigns\tholder')).toBe(true);
    expect(await takeDialSlot(s, firm.slug, 'call_parked', `campaigns\t${parked.id}`)).toBe(false);

    // The busy call ends; the worker handling its end frees the slot and pops the waiter, then
    // dies before promoting it.
    await s.redis.zrem(keys.dialSlots(firm.slug), 'call_busy');
    const popped = await popWaiters(s, firm.slug, 1);
    expect(popped[0]).toBe(`campaigns\t${parked.id}`);
    expect(await s.redis.zcard(keys.dialWaiters(firm.slug))).toBe(0);
    expect(await parked.getState()).toBe('delayed');

    // A wake-up under way is not taken over at once ...
    await reapDialSlots(s);
    expect(await parked.getState()).toBe('delayed');
    // ... but once its lease has run out, the reaper promotes the job.
    await eventually(
      async () => {
        await reapDialSlots(s);
        expect(await parked.getState()).toBe('waiting');
      },
      25_000,
      1000,
    );
    expect(await s.redis.zcard(keys.dialWaking(firm.slug))).toBe(0);
  });
});
