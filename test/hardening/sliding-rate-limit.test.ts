// Fixed one-minute windows let 20 requests through a 10-a-minute limit across a
// window edge. The limiter (api/middleware/rate-limit.ts) now slides: no span of a minute lets in
// more than the limit, a refused request is told exactly when to come back (Retry-After), and it
// is refused only when the limit was reached in the last 65 s (its 5-second buckets).
// "Now" is the process clock, set here (only Date is faked; Redis and its timers are real).
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { RateLimiter } from '../../api/middleware/rate-limit.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import type { Principal } from '../../core/domain/access/principal.js';
import { AppError } from '../../core/platform/errors.js';
import { createLogger } from '../../core/platform/logger.js';
import { rand } from '../helpers/stack.js';

const LIMIT = 10;
const MINUTE = 60_000;

let redis: Redis;
let limiter: RateLimiter;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { lazyConnect: false });
  limiter = new RateLimiter(
    redis,
    redisKeys({ queuePrefix: `t${rand(4)}`, redisCluster: false }),
    {
      perPrincipal: LIMIT,
      perWebhookFirm: LIMIT,
      perUnauthenticatedAddress: LIMIT,
      perOpenRouteAddress: LIMIT,
      perWidgetSession: LIMIT,
      perWidgetAddress: LIMIT,
    },
    createLogger('silent', 'test'),
  );
});
afterEach(() => {
  vi.useRealTimers();
});
afterAll(async () => {
  await redis.quit();
});

const principal = (): Principal => ({ kind: 'firm', firm: 'acme', via: 'api_key', subject: rand() });

/** One request of `who` at `at` (ms): null when let in, else its Retry-After (s). */
async function requestAt(who: Principal, at: number): Promise<number | null> {
  vi.useFakeTimers({ toFake: ['Date'], now: at });
  try {
    await limiter.checkPrincipal(who);
    return null;
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 429) throw err;
    return Number(err.headers!['Retry-After']);
  } finally {
    vi.useRealTimers();
  }
}

/** The first minute edge at least a minute from now (the windows are kept in Redis by time). */
const nextEdge = (): number => (Math.floor(Date.now() / MINUTE) + 2) * MINUTE;

describe('sliding rate-limit windows', () => {
  beforeAll(async () => {
    await redis.ping();
  });

  it('ten requests just before a minute edge and ten just after let in ten, not twenty', async () => {
    const who = principal();
    const edge = nextEdge();
    const admitted: number[] = [];
    for (const at of [
      ...Array.from({ length: LIMIT }, (_, i) => edge - 2_000 + i * 100),
      ...Array.from({ length: LIMIT }, (_, i) => edge + 500 + i * 100),
    ]) {
      if ((await requestAt(who, at)) === null) admitted.push(at);
    }
    expect(admitted).toHaveLength(LIMIT);
  });

  it('Retry-After is when the next request is let in, and not a second earlier', async () => {
    const who = principal();
    const start = nextEdge() + 12_345;
    for (let i = 0; i < LIMIT; i++) expect(await requestAt(who, start + i * 1_000)).toBeNull();
    const refusedAt = start + 20_000;
    const retryAfter = await requestAt(who, refusedAt);
    expect(retryAfter).not.toBeNull();
    expect(retryAfter!).toBeGreaterThanOrEqual(1);
    expect(retryAfter!).toBeLessThanOrEqual(65);
    expect(await requestAt(who, refusedAt + (retryAfter! - 1) * 1_000)).not.toBeNull();
    expect(await requestAt(who, refusedAt + retryAfter! * 1_000)).toBeNull();
  });

  it('for any arrival times, no minute lets in more than the limit, and a refusal means the limit was reached in the last 65 s', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 15_000 }), { minLength: 1, maxLength: 40 }),
        async (gaps) => {
          runs++;
          const who = principal();
          let at = nextEdge() - 30_000;
          const admitted: number[] = [];
          for (const gap of gaps) {
            at += gap;
            const retryAfter = await requestAt(who, at);
            const inLast = (span: number) => admitted.filter((t) => t > at - span).length;
            if (retryAfter === null) {
              expect(inLast(MINUTE)).toBeLessThan(LIMIT);
              admitted.push(at);
            } else {
              expect(inLast(MINUTE + 5_000)).toBeGreaterThanOrEqual(LIMIT);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
    expect(runs).toBe(60);
  });
});
