import Koa from 'koa';
import type { Services } from '../core/wiring/services.js';
import { bullBoard } from '../dashboard/bull-board.js';
import { createMetrics, type HttpMetrics } from './metrics.js';
import { errorHandler } from './middleware/errors.js';
import { allowedMethods } from './middleware/methods.js';
import { apiCors } from './middleware/cors.js';
import { rateLimiterOf, unauthenticatedLimit } from './middleware/rate-limit.js';
import { requestContext } from './middleware/request-context.js';
import type { AnyRoute } from './route.js';
import { routeDispatch } from './route-dispatch.js';
import { buildRouter } from './router.js';
import { enableReadCache } from '../core/platform/db/read-cache.js';
import { businessRoutes } from './routes/index.js';
import { opsRoutes, type Lifecycle } from './routes/ops/routes.js';

export interface App {
  koa: Koa;
  routes: AnyRoute[];
  metrics: HttpMetrics;
  lifecycle: Lifecycle;
}

/** The HTTP front: error shape, request context, Bull Board, then the declared routes. */
export function createApp(services: Services): App {
  enableReadCache(services.mongo.db);
  // Behind a proxy (TRUST_PROXY), the client address is the X-Forwarded-For entry that proxy added
  // (the last one); otherwise the socket's, so a client cannot choose its address for the limits.
  const koa = new Koa({ proxy: services.config.trustProxy, maxIpsCount: 1 });
  const metrics = createMetrics(services.queues, services.mongo.db, services);
  const lifecycle: Lifecycle = { shuttingDown: false };
  const routes: AnyRoute[] = [];
  routes.push(...opsRoutes({ metrics, lifecycle, allRoutes: () => routes }), ...businessRoutes);
  const limiter = rateLimiterOf(services);
  const router = buildRouter(routes, services, limiter);
  const { dispatch, routed } = routeDispatch(router);

  koa.silent = true; // errors are logged by errorHandler, with the request id
  koa.use(requestContext(services.log, metrics));
  koa.use(errorHandler(services.log));
  koa.use(unauthenticatedLimit(limiter));
  koa.use(async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    // Handlers that wait (the contacts import) answer early once the process is stopping.
    ctx.state.lifecycle = lifecycle;
    await next();
  });
  koa.use(bullBoard(services));
  // After Bull Board, which answers its own paths: it never gets CORS headers.
  koa.use(apiCors(routes, services, routed));
  koa.use(dispatch);
  koa.use(allowedMethods(router));
  return { koa, routes, metrics, lifecycle };
}
