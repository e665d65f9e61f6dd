import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../core/platform/logger.js';
import type { HttpMetrics } from '../metrics.js';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Request id (kept from X-Request-Id when sane), a child logger, and the latency histogram. */
export function requestContext(log: Logger, metrics: HttpMetrics): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    const child = log.child({ requestId });
    ctx.state.log = child;
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.httpDuration.observe(
        { method: ctx.method, route: String(route), status: String(ctx.status) },
        seconds,
      );
      child.debug(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1000) },
        'request',
      );
    }
  };
}
