import type { Middleware } from 'koa';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../core/platform/logger.js';
import type { HttpMetrics } from '../metrics.js';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The client's X-Request-Id when it is sane to log and send back; undefined otherwise. */
export const safeRequestId = (incoming: string): string | undefined =>
  SAFE_ID.test(incoming) ? incoming : undefined;
/** pino's number for the debug level. */
const DEBUG = 20;

/**
 * A request's `ctx.state`: its id, its logger (a child bound to the id) made when something logs,
 * and the entries the middleware adds, declared here so every request's state has one shape. (A
 * getter defined on each request's state, as before, left every state a slow dictionary, and V8's
 * caches for what reads it went megamorphic.)
 */
class RequestState {
  /** Set by the app's middleware: handlers that wait answer early once the process stops. */
  lifecycle: unknown = undefined;
  /** The validated path parameters (api/router.ts). */
  params: unknown = undefined;
  principal: unknown = undefined;
  /** A webhook route's credentials, and how its body proved itself (api/router.ts). */
  webhook: unknown = undefined;
  webhookProof: unknown = undefined;
  private child: Logger | undefined = undefined;
  constructor(
    private readonly base: Logger,
    readonly requestId: string,
  ) {}
  get log(): Logger {
    return (this.child ??= this.base.child({ requestId: this.requestId }));
  }
}

/**
 * Request id (kept from X-Request-Id when sane), a child logger, and the latency histogram. The
 * child logger (bound to the request id) is made when something logs, not for every request; the
 * line per request is written at debug level, and built only when that level is on.
 */
export function requestContext(log: Logger, metrics: HttpMetrics): Middleware {
  return async (ctx, next) => {
    const requestId = safeRequestId(ctx.get('X-Request-Id')) ?? randomUUID();
    ctx.set('X-Request-Id', requestId);
    const state = new RequestState(log, requestId);
    ctx.state = state;
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
      if (log.levelVal <= DEBUG) {
        state.log.debug(
          { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1000) },
          'request',
        );
      }
    }
  };
}
