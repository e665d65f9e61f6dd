import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { ApiPrincipal, Principal } from '../core/domain/access/principal.js';
import { authenticateBearer } from '../core/domain/access/authenticate.js';
import { mustReread, readCacheOf } from '../core/platform/db/read-cache.js';
import { mayActOn, requirePlatform } from '../core/domain/access/access.js';
import { forbidden } from '../core/platform/errors.js';
import { FIRM_SLUG_PATTERN } from '../core/domain/firms/firm-slug.js';
import { originNotAllowed } from '../core/domain/widget/origins.js';
import type { Services } from '../core/wiring/services.js';
import type { Logger } from '../core/platform/logger.js';
import { answer } from './answer.js';
import { jsonBody } from './middleware/body.js';
import { widgetKeyCors } from './middleware/cors.js';
import type { FirmByteBudgets } from './middleware/body-budget.js';
import { limitAddress } from '../core/platform/client-address.js';
import { largeBodyBudgetsOf, largeWebhookBody, verifyWebhookBody } from './middleware/webhook-body.js';
import type { RateLimiter } from './middleware/rate-limit.js';
import { koaPath, type AnyRoute, type BodyProof, type WebhookCredentials } from './route.js';
import { compileValidator, type Validator } from './validation.js';

const SLUG = new RegExp(FIRM_SLUG_PATTERN);

/**
 * The principal of the request's Authorization header (401 when it has none valid). A widget
 * token is refused (403) unless the route accepts one: see `acceptWidget` in api/route.ts.
 */
export const authenticateRequest = (ctx: Context, services: Services): Promise<ApiPrincipal> =>
  authenticateBearer(ctx.get('Authorization') || undefined, services.config, services.mongo.db);

/**
 * A firm token naming another firm in the query is refused (403) as one naming it in the path or
 * the body is, whether the route reads firmSlug from the query or not, and however often firmSlug
 * is repeated (?firmSlug=a&firmSlug=b names both). A value that is no slug names no firm: the
 * route's own validation answers it (400), or ignores it.
 */
export function refuseOtherFirmInQuery(ctx: Context, principal: Principal): void {
  const named = ctx.query.firmSlug;
  const names = named === undefined ? [] : typeof named === 'string' ? [named] : named;
  if (names.some((slug) => SLUG.test(slug) && !mayActOn(principal, slug))) throw forbidden();
}

/**
 * A webhook delivery proved itself: a matching signature counts against the firm, and makes its
 * sender's address a proven one for the firm's large bodies; one let in unsigned (Cal.com's PING)
 * counts against the sender's address, like a 401.
 */
export async function countWebhookProof(
  ctx: Context,
  largeBodies: FirmByteBudgets,
  limiter: RateLimiter,
): Promise<void> {
  const proof = ctx.state.webhookProof as BodyProof | undefined;
  if (proof === 'signed') {
    const { firm } = ctx.state.webhook as WebhookCredentials;
    largeBodies.prove(firm, limitAddress(ctx.ip));
    await limiter.countWebhook(firm);
  } else if (proof === 'unsigned') {
    const refused = await limiter.countUnauthenticated(ctx.ip);
    if (refused !== null) throw refused;
  }
}

export function buildRouter(routes: AnyRoute[], services: Services, limiter: RateLimiter): Router {
  const router = new Router();
  // The web process's read cache (API keys, firms, agents), checked against the change epoch
  // that the rate-limit round trip returns (core/platform/db/read-cache.ts).
  const cache = readCacheOf(services.mongo.db);
  // One budget for the large webhook bodies this process reads at once, each firm within its share
  // (api/middleware/body-budget.ts).
  const largeBodies = largeBodyBudgetsOf(services.config);
  const { webhookBodyMinBytesPerSecond } = services.config;
  for (const route of routes) {
    const validators = {
      body: route.body === undefined ? undefined : compileValidator(route.body, 'body'),
      query: route.query === undefined ? undefined : compileValidator(route.query, 'query'),
      params: route.params === undefined ? undefined : compileValidator(route.params, 'params'),
    };
    const chain: Middleware[] = [];
    if (route.addressLimited === true) {
      // A key route's refusal waits for its key (the body's, read further down), so that a page on
      // one of the key's origins gets the CORS headers and can read Retry-After; anything that
      // fails before then (an unreadable body) is answered with the refusal, without them.
      const waitForKey = route.cors === 'widgetKey';
      chain.push(async (ctx, next) => {
        let refusal: unknown;
        try {
          await limiter.checkOpenRoute(ctx.ip);
        } catch (err) {
          if (!waitForKey) throw err;
          refusal = err;
        }
        if (refusal === undefined) return next();
        ctx.state.addressRefusal = refusal;
        try {
          await next();
        } catch {
          // The refusal itself (with the CORS headers when the key allows the origin), or what
          // failed before it was thrown: the refusal stands.
        }
        throw refusal;
      });
    }
    // Path parameters first: a malformed one is a 400 whatever the credentials, before any lookup.
    const validateParams = validators.params;
    if (validateParams !== undefined) {
      chain.push(async (ctx, next) => {
        ctx.state.params = validateParams({ ...ctx.params });
        await next();
      });
    }
    const auth = route.auth;
    if (auth.kind === 'token' || auth.kind === 'platform') {
      const options = {
        acceptWidget: auth.kind === 'token' && auth.acceptWidget === true,
        basic: auth.kind === 'token' && auth.basic === true,
      };
      const authenticate = async (ctx: Context): Promise<Principal> => {
        const header = ctx.get('Authorization') || undefined;
        const principal: Principal = options.acceptWidget
          ? await authenticateBearer(header, services.config, services.mongo.db, {
              ...options,
              acceptWidget: true,
            })
          : await authenticateBearer(header, services.config, services.mongo.db, {
              ...options,
              acceptWidget: false,
            });
        if (auth.kind === 'platform') requirePlatform(principal);
        // A widget key's token works only from the page origin it was issued to (a browser always
        // names its page's origin on these cross-origin calls; a server has no Origin to send).
        const origin = ctx.get('Origin');
        if (principal.kind === 'widget' && principal.binding !== undefined && origin !== '') {
          if (origin !== principal.binding.origin) throw originNotAllowed(origin, 'token');
        }
        return principal;
      };
      chain.push(async (ctx, next) => {
        const before = cache?.currentEpoch ?? null;
        let principal = await authenticate(ctx);
        if (route.rateLimited !== false) {
          // A visitor's own buckets first: what one visitor sends beyond its share is refused
          // before it is counted against the firm's widget, which all its visitors share.
          if (principal.kind === 'widget') await limiter.checkWidgetVisitor(principal, ctx.ip);
          const epoch = await limiter.checkPrincipal(principal);
          cache?.observeEpoch(epoch);
          // Something changed since the cached documents were read: authenticate afresh.
          if (mustReread(before, epoch)) principal = await authenticate(ctx);
        }
        ctx.state.principal = principal;
        refuseOtherFirmInQuery(ctx, principal);
        await next();
      });
    }
    if (auth.kind === 'webhook') {
      // Everything that can be refused without the body is refused before it is read: the
      // credentials, and a firm over its webhook limit. A bearer token counts against that limit
      // now; a signature only once it matched the body (below), so forged deliveries cannot use up
      // a firm's limit: they are 401s, counted against the sender's address.
      chain.push(async (ctx, next) => {
        const before = cache?.currentEpoch ?? null;
        let credentials = await auth.authenticate(ctx, services);
        const epoch = await limiter.checkWebhook(credentials.firm, credentials.verifyBody === undefined);
        cache?.observeEpoch(epoch);
        if (mustReread(before, epoch)) credentials = await auth.authenticate(ctx, services);
        ctx.state.principal = credentials.principal;
        ctx.state.webhook = credentials;
        await next();
      });
    }
    const countProof = (ctx: Context): Promise<void> => countWebhookProof(ctx, largeBodies, limiter);
    if (route.largeBodyBytes !== undefined) {
      if (auth.kind !== 'webhook') throw new Error(`${route.operationId}: largeBodyBytes is for webhooks`);
      // Read, signature checked and counted, then parsed: one copy of the body at a time, and the
      // parsed body held across no round trip before the handler takes what it keeps.
      chain.push(
        largeWebhookBody(route.largeBodyBytes, largeBodies, webhookBodyMinBytesPerSecond, countProof),
      );
    } else if (['POST', 'PUT', 'PATCH'].includes(route.method)) {
      chain.push(
        jsonBody(route.bodyLimit, {
          nul: auth.kind === 'webhook' ? 'replace' : 'reject',
          verbatimJson: route.verbatimJson === true,
        }),
      );
    }
    if (auth.kind === 'webhook') {
      if (route.largeBodyBytes === undefined) {
        chain.push(async (ctx, next) => {
          await verifyWebhookBody(ctx, (ctx.request as { rawBody?: string }).rawBody ?? '');
          await next();
        });
      }
      if (route.largeBodyBytes === undefined) {
        chain.push(async (ctx, next) => {
          await countProof(ctx);
          await next();
        });
      }
    }
    // A key route's CORS needs the key, so it is answered once the body is read.
    if (route.cors === 'widgetKey') {
      chain.push(widgetKeyCors(services));
      // An address over its limit (counted first, above) is refused here, inside the key's CORS.
      chain.push(async (ctx, next) => {
        if (ctx.state.addressRefusal !== undefined) throw ctx.state.addressRefusal;
        await next();
      });
    }
    chain.push(handle(route, services, validators));
    router.register(koaPath(route.path), [route.method], chain, { name: route.operationId });
  }
  return router;
}

function handle(route: AnyRoute, services: Services, v: { body?: Validator; query?: Validator }): Middleware {
  return async (ctx) => {
    const request = ctx.request as unknown as { body?: unknown; rawBody?: string };
    const body = v.body === undefined ? undefined : v.body(request.body ?? {});
    if (route.largeBodyBytes !== undefined) {
      // The handler has the body; nothing else keeps it once the handler has let it go. (Set to
      // undefined, not deleted: a delete leaves the request object a slow dictionary.)
      request.body = undefined;
      request.rawBody = undefined;
    }
    const query = v.query === undefined ? {} : v.query({ ...ctx.query });
    const params = (ctx.state.params as Record<string, never> | undefined) ?? {};
    const result = await route.handler(
      // The route's own type says whether it may see a widget principal; the chain above made it so.
      new HandlerInput(
        services,
        ctx.state.principal as ApiPrincipal,
        body as undefined,
        query as Record<string, never>,
        params as Record<string, never>,
        ctx,
      ),
    );
    // A handler that wrote the response itself (HTML, 202) returns undefined.
    if (result !== undefined) answer(ctx, 200, result);
  };
}

/**
 * What a handler is given. A class, so its logger is a getter of the prototype, made when the
 * handler logs (api/middleware/request-context.ts): an object literal with a getter was built
 * the slow way on every request.
 */
class HandlerInput {
  constructor(
    readonly services: Services,
    readonly principal: ApiPrincipal,
    // The erased types of AnyRoute's handler: each route's own definition typed them.
    readonly body: undefined,
    readonly query: Record<string, never>,
    readonly params: Record<string, never>,
    readonly koa: Context,
  ) {}
  get log(): Logger {
    return this.koa.state.log as Logger;
  }
}
