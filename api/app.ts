import Koa from 'koa';
import type { Services } from '../core/wiring/services.js';
import { bullBoard } from '../dashboard/bull-board.js';
import { createMetrics, type HttpMetrics } from './metrics.js';
import { errorHandler } from './middleware/errors.js';
import { allowedMethods } from './middleware/methods.js';
import { RateLimiter } from './middleware/rate-limit.js';
import { requestContext } from './middleware/request-context.js';
import type { AnyRoute } from './route.js';
import { buildRouter } from './router.js';
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
  const koa = new Koa({ proxy: true });
  const metrics = createMetrics(services.queues);
  const lifecycle: Lifecycle = { shuttingDown: false };
  const routes: AnyRoute[] = [];
  routes.push(...opsRoutes({ metrics, lifecycle, allRoutes: () => routes }), ...businessRoutes);
  const limiter = new RateLimiter(services.redis, services.config.rateLimitPerMinute, services.log);
  const router = buildRouter(routes, services, limiter);

  koa.silent = true; // errors are logged by errorHandler, with the request id
  koa.use(requestContext(services.log, metrics));
  koa.use(errorHandler(services.log));
  koa.use(async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  });
  koa.use(bullBoard(services));
  koa.use(router.routes());
  koa.use(allowedMethods(router));
  return { koa, routes, metrics, lifecycle };
}
