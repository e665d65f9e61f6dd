import type { Redis } from 'ioredis';
import { AppError } from '../../core/platform/errors.js';
import { sha256Hex } from '../../core/platform/crypto.js';
import type { Logger } from '../../core/platform/logger.js';

const WINDOW_MS = 60_000;
// INCR and set the window's expiry on the first hit, atomically; returns [count, ms left].
const SCRIPT = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {c, redis.call('PTTL', KEYS[1])}`;

/**
 * A fixed one-minute window per token, kept in Redis so every web dyno shares it. When Redis
 * is down the limit is not enforced (reads from MongoDB keep working); enqueueing still answers 503.
 */
export class RateLimiter {
  private lastWarning = 0;
  constructor(
    private readonly redis: Redis,
    private readonly perMinute: number,
    private readonly log: Logger,
  ) {}

  private warn(reason: string): void {
    if (Date.now() - this.lastWarning > 30_000) {
      this.lastWarning = Date.now();
      this.log.warn({ reason }, 'rate limiter unavailable; not enforcing');
    }
  }

  async check(token: string): Promise<void> {
    const key = `ratelimit:${sha256Hex(token).slice(0, 32)}:${Math.floor(Date.now() / WINDOW_MS)}`;
    let count: number;
    let ttl: number;
    if (this.redis.status !== 'ready') return this.warn('not connected');
    try {
      [count, ttl] = (await this.redis.eval(SCRIPT, 1, key, String(WINDOW_MS))) as [number, number];
    } catch (err) {
      return this.warn((err as Error).message);
    }
    if (count > this.perMinute) {
      const retryAfter = Math.max(1, Math.ceil(ttl / 1000));
      throw new AppError(
        429,
        'rate_limited',
        `Too many requests for this token (limit ${this.perMinute} a minute); retry in ${retryAfter} s.`,
        undefined,
        { 'Retry-After': String(retryAfter) },
      );
    }
  }
}
