import type { Middleware } from 'koa';
import type { RedisClient } from '../../core/platform/redis.js';
import { AppError, rateLimited } from '../../core/platform/errors.js';
import { sha256Hex } from '../../core/platform/crypto.js';
import type { Logger } from '../../core/platform/logger.js';
import type { Principal, WidgetPrincipal } from '../../core/domain/access/principal.js';
import { loadRedisScript } from '../../core/platform/redis-script.js';
import { MemoryWindows } from './memory-windows.js';
import { redisKeys, type RateLimitKind, type RedisKeys } from '../../core/platform/redis-keys.js';
import { limitAddress } from '../../core/platform/client-address.js';
import type { Services } from '../../core/wiring/services.js';
import { bearerToken } from '../../core/domain/access/authenticate.js';

// Sliding one-minute windows kept in Redis, so every web process shares them
// (docs/authentication.md#rate-limits); no span of a minute ever lets in more than the limit:
// - per principal (firm + subject): a token's spelling cannot buy a fresh bucket, and a firm's
//   widget tokens share one;
// - per firm for the webhook receivers, their own limit, counting only deliveries that proved
//   themselves (a bearer token, or a signature that matched the body);
// - per client address for unauthenticated requests: every 401 counts, and an address over
//   its limit is refused with 429 before any lookup, by each process from memory; a request that
//   presents a token is still let in to be checked, so a valid key is never refused for what
//   others did from its address (its 401 is a 429);
// - per client address for the routes that take no token (the widget session and challenge, the
//   Clio callback): every request counts;
// - per widget session and per visitor address, before the firm's widget bucket: one visitor
//   cannot spend what the firm's other visitors share.
// A client address is an IPv4 address, or the /64 of an IPv6 one (core/platform/client-address.ts).
// When Redis cannot be reached the same windows are kept in this process's memory
// (api/middleware/memory-windows.ts), bounded, so the limits hold through an outage too (per
// process, and without the read cache's change epoch: cached documents are then read afresh).

const WINDOW_MS = 60_000;
/** The window is counted in buckets of 5 s: a request counts for 60 to 65 s. */
const BUCKETS = 12;
const HIT = loadRedisScript(new URL('./rate-limit-hit.lua', import.meta.url), {
  keys: ['counts'],
  args: ['now_ms', 'window_ms', 'buckets', 'limit', 'count'],
});

export interface RateLimits {
  perPrincipal: number;
  perWebhookFirm: number;
  perUnauthenticatedAddress: number;
  /** Requests per address to the routes that take no token (`OPEN_ROUTE_RATE_LIMIT_PER_MINUTE`). */
  perOpenRouteAddress: number;
  /** Requests per widget token (`WIDGET_SESSION_RATE_LIMIT_PER_MINUTE`). */
  perWidgetSession: number;
  /** Widget-token requests per visitor address and firm (`WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE`). */
  perWidgetAddress: number;
}

/**
 * Who a principal is, for its rate-limit window (hashed into the window's key). Widget tokens
 * count as their firm's widget, one principal however many tokens its pages mint.
 */
const principalIdentity = (p: Principal): string => {
  if (p.kind === 'platform') return `platform|${p.subject}`;
  if (p.kind === 'widget') return `firm|${p.firm}|${p.via}`;
  return `firm|${p.firm}|${p.via}|${p.subject}`;
};

/** A process's limiter over its Redis, with the limits its configuration sets. */
export function rateLimiterOf(services: Pick<Services, 'redis' | 'config' | 'log'>): RateLimiter {
  const { config } = services;
  return new RateLimiter(
    services.redis,
    redisKeys(config),
    {
      perPrincipal: config.rateLimitPerMinute,
      perWebhookFirm: config.webhookRateLimitPerMinute,
      perUnauthenticatedAddress: config.unauthenticatedRateLimitPerMinute,
      perOpenRouteAddress: config.openRouteRateLimitPerMinute,
      perWidgetSession: config.widgetSessionRateLimitPerMinute,
      perWidgetAddress: config.widgetAddressRateLimitPerMinute,
    },
    services.log,
  );
}

export class RateLimiter {
  private lastWarning = 0;
  /** Client addresses over their unauthenticated limit, until when (ms). */
  private readonly blocked = new Map<string, number>();
  /** The windows while Redis cannot be reached. */
  private readonly memory = new MemoryWindows();
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly limits: RateLimits,
    private readonly log: Logger,
  ) {}

  /** Counts a request of this principal (429 over the limit); returns the change epoch (null: unknown). */
  checkPrincipal(principal: Principal): Promise<string | null> {
    return this.enforce(
      'p',
      sha256Hex(principalIdentity(principal)).slice(0, 32),
      this.limits.perPrincipal,
      'token',
      true,
    );
  }

  /**
   * A widget token's request, counted for its session and for the visitor's address (with the
   * firm) before the firm's widget bucket (`checkPrincipal`): one visitor, however many tokens
   * it mints, cannot use up what the firm's other visitors share.
   */
  async checkWidgetVisitor(principal: WidgetPrincipal, address: string): Promise<void> {
    await this.enforce(
      'ws',
      sha256Hex(`${principal.firm}|${principal.subject}`).slice(0, 32),
      this.limits.perWidgetSession,
      'widget session',
      true,
    );
    await this.enforce(
      'wa',
      sha256Hex(`${principal.firm}|${limitAddress(address)}`).slice(0, 32),
      this.limits.perWidgetAddress,
      "address on this firm's widget",
      true,
    );
  }

  /** A request to a route that takes no token (widget session and challenge, Clio callback), per address. */
  async checkOpenRoute(address: string): Promise<void> {
    await this.enforce(
      'a',
      sha256Hex(limitAddress(address)).slice(0, 32),
      this.limits.perOpenRouteAddress,
      'address',
      true,
    );
  }

  /**
   * A webhook delivery to this firm (429 over the limit); returns the change epoch. Counted only
   * when `count`: a signed delivery is looked at before its body is read (refused if the firm is
   * over its limit), and counted once its signature matched the body.
   */
  checkWebhook(firm: string, count: boolean): Promise<string | null> {
    return this.enforce('w', firm, this.limits.perWebhookFirm, "firm's webhooks", count);
  }

  /**
   * Counts a signed delivery once its signature matched the body (429 over the limit), after
   * `checkWebhook(firm, false)` looked before the body was read. The change epoch is not read
   * again: the look's epoch already decided whether the credentials were read afresh, and the
   * next request sees any later change.
   */
  async countWebhook(firm: string): Promise<void> {
    await this.enforce('w', firm, this.limits.perWebhookFirm, "firm's webhooks", true, false);
  }

  /** Whether any address is refused now: until one is, a request's address is not even worked out. */
  get refusesAnyAddress(): boolean {
    return this.blocked.size > 0;
  }

  /** 429 at once, without I/O, for an address (any of its /64) that has used up its unauthenticated requests. */
  assertAddressAllowed(address: string): void {
    const refusal = this.refusalFor(address);
    if (refusal !== null) throw refusal;
  }

  /** The 429 for an address that has used up its unauthenticated requests, or null. */
  refusalFor(ip: string): AppError | null {
    if (this.blocked.size === 0) return null;
    const address = limitAddress(ip);
    const until = this.blocked.get(address);
    if (until === undefined) return null;
    if (until <= Date.now()) {
      this.blocked.delete(address);
      return null;
    }
    return tooManyUnauthenticated(Math.ceil((until - Date.now()) / 1000));
  }

  /** Counts one unauthenticated request; the 429 to answer instead once the address is over its limit. */
  async countUnauthenticated(ip: string): Promise<AppError | null> {
    const address = limitAddress(ip);
    const hit = await this.hit('u', address, this.limits.perUnauthenticatedAddress, true);
    if (hit.allowed) return null;
    this.blocked.set(address, Date.now() + hit.waitMs);
    if (this.blocked.size > 10_000) this.blocked.delete(this.blocked.keys().next().value!);
    return tooManyUnauthenticated(Math.ceil(hit.waitMs / 1000));
  }

  private async enforce(
    kind: RateLimitKind,
    id: string,
    limit: number,
    what: string,
    count: boolean,
    withEpoch = true,
  ): Promise<string | null> {
    const hit = await this.hit(kind, id, limit, count, withEpoch);
    if (hit.allowed) return hit.epoch;
    const retryAfter = Math.max(1, Math.ceil(hit.waitMs / 1000));
    throw rateLimited(
      `Too many requests for this ${what} (limit ${limit} a minute); retry in ${retryAfter} s.`,
      retryAfter,
    );
  }

  private async hit(
    kind: RateLimitKind,
    id: string,
    limit: number,
    count: boolean,
    withEpoch = true,
  ): Promise<{ allowed: boolean; waitMs: number; epoch: string | null }> {
    if (this.redis.status !== 'ready') return this.inMemory(kind, id, limit, count, 'not connected');
    try {
      // Both commands are written at once: one round trip on a single node, as before.
      const [[allowed, waitMs], epoch] = await Promise.all([
        HIT.run(
          this.redis,
          { counts: this.keys.rateLimitCounts(kind, id) },
          { now_ms: Date.now(), window_ms: WINDOW_MS, buckets: BUCKETS, limit, count: count ? 1 : 0 },
        ) as Promise<[number, number]>,
        withEpoch ? this.redis.get(this.keys.readCacheEpoch()) : null,
      ]);
      return {
        allowed: allowed === 1,
        waitMs: Math.max(1000, waitMs),
        epoch: withEpoch ? (epoch ?? '0') : null,
      };
    } catch (err) {
      return this.inMemory(kind, id, limit, count, (err as Error).message);
    }
  }

  /** The window kept in this process while Redis cannot be reached; the change epoch is unknown. */
  private inMemory(
    kind: RateLimitKind,
    id: string,
    limit: number,
    count: boolean,
    reason: string,
  ): { allowed: boolean; waitMs: number; epoch: null } {
    this.warn(reason);
    const hit = this.memory.hit(`${kind}|${id}`, Date.now(), WINDOW_MS, BUCKETS, limit, count);
    return { allowed: hit.allowed, waitMs: Math.max(1000, hit.waitMs), epoch: null };
  }

  private warn(reason: string): void {
    if (Date.now() - this.lastWarning > 30_000) {
      this.lastWarning = Date.now();
      this.log.warn({ reason }, 'rate limiter: Redis unavailable; limits kept in this process');
    }
  }
}

const tooManyUnauthenticated = (retryAfter: number): AppError =>
  rateLimited(
    `Too many requests without valid credentials from this address; retry in ${Math.max(1, retryAfter)} s.`,
    Math.max(1, retryAfter),
  );

/**
 * Whether a request presents a token that could be valid (an `Authorization` header with a
 * bearer token or a basic-auth password of a plausible length): such a request from an address
 * over its unauthenticated limit is still checked, so that a valid key is never refused for the
 * failures of others behind the same address (and an invalid one is answered 429 as before).
 */
function presentsToken(header: string): boolean {
  if (header === '' || header.length > 4200) return false;
  const token = bearerToken(header) ?? (/^Basic\s+[A-Za-z0-9+/=]{8,}\s*$/i.test(header) ? 'basic' : null);
  return token !== null && token.length >= 5;
}

/**
 * Every 401 counts against the client address; an address over its limit gets 429 before any
 * work, unless the request presents a token (which is checked; its 401 becomes the 429).
 */
export function unauthenticatedLimit(limiter: RateLimiter): Middleware {
  return async (ctx, next) => {
    if (limiter.refusesAnyAddress && !presentsToken(ctx.get('Authorization'))) {
      limiter.assertAddressAllowed(ctx.ip);
    }
    try {
      await next();
    } catch (err) {
      if (err instanceof AppError && err.status === 401)
        throw (await limiter.countUnauthenticated(ctx.ip)) ?? limiter.refusalFor(ctx.ip) ?? err;
      throw err;
    }
  };
}
