// The byte budget of large webhook bodies (api/middleware/body-budget.ts): deliveries that fit
// are admitted at once, the others wait unread in order and are admitted as room frees, and one
// that waits too long is a 503 with Retry-After; a client that goes away leaves the queue.
import { describe, expect, it } from 'vitest';
import { ByteBudget } from '../../api/middleware/body-budget.js';
import { AppError } from '../../core/platform/errors.js';

describe('ByteBudget', () => {
  it('admits what fits, queues the rest in order, and admits them as room frees', async () => {
    const budget = new ByteBudget(100, 5_000);
    const first = await budget.reserve(60);
    expect(budget.reserved).toBe(60);
    const order: string[] = [];
    const big = budget.reserve(70).then((release) => (order.push('big'), release));
    // A small one behind a waiting big one waits too: first come, first served.
    const small = budget.reserve(10).then((release) => (order.push('small'), release));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual([]);
    first();
    first(); // releasing twice gives back once
    const [releaseBig, releaseSmall] = await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(budget.reserved).toBe(80);
    releaseBig();
    releaseSmall();
    expect(budget.reserved).toBe(0);
  });

  it('a request larger than the whole budget waits for all of it, never forever', async () => {
    const budget = new ByteBudget(100, 5_000);
    const release = await budget.reserve(500);
    expect(budget.reserved).toBe(100);
    release();
  });

  it('one that waits past the limit is a 503 unavailable with Retry-After, and leaves room for the next', async () => {
    const budget = new ByteBudget(100, 50);
    const held = await budget.reserve(100);
    const refused = await budget.reserve(10).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(503);
    expect((refused as AppError).code).toBe('unavailable');
    expect((refused as AppError).headers).toMatchObject({ 'Retry-After': expect.any(String) });
    held();
    expect(budget.reserved).toBe(0);
  });

  it('a client that goes away while waiting leaves the queue', async () => {
    const budget = new ByteBudget(100, 5_000);
    const held = await budget.reserve(100);
    const gone = new AbortController();
    const waiting = budget.reserve(50, gone.signal).catch((error: unknown) => error);
    gone.abort();
    expect(await waiting).toBeInstanceOf(Error);
    held();
    expect(budget.reserved).toBe(0);
    (await budget.reserve(100))();
  });
});
