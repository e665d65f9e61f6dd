// The rate limiter with every limit out of reach: the bench measures the limiter's own Redis
// script (the work every request pays), never a refusal.
import { RateLimiter } from '../../api/middleware/rate-limit.js';
import { createLogger } from '../../core/platform/logger.js';
import type { RedisClient } from '../../core/platform/redis.js';
import type { RedisKeys } from '../../core/platform/redis-keys.js';

const OUT_OF_REACH = 1e9;

export function unlimitedLimiter(redis: RedisClient, keys: RedisKeys, name: string): RateLimiter {
  return new RateLimiter(
    redis,
    keys,
    {
      perPrincipal: OUT_OF_REACH,
      perWebhookFirm: OUT_OF_REACH,
      perUnauthenticatedAddress: OUT_OF_REACH,
      perOpenRouteAddress: OUT_OF_REACH,
      perWidgetSession: OUT_OF_REACH,
      perWidgetAddress: OUT_OF_REACH,
    },
    createLogger('warn', name),
  );
}
