import type { Middleware } from 'koa';
import {
  AppError,
  UnavailableError,
  isMongoUnavailable,
  isRedisUnavailable,
} from '../../core/platform/errors.js';
import type { Logger } from '../../core/platform/logger.js';

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** The one top-level catch: every failure leaves as the contract's error shape, never a stack. */
export function errorHandler(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) {
        throw new AppError(404, 'route_not_found', `No route matches ${ctx.method} ${ctx.path}.`);
      }
    } catch (err) {
      const appError = toAppError(err);
      if (appError.status >= 500) {
        ((ctx.state.log as Logger | undefined) ?? log).error({ err }, 'request failed');
      }
      ctx.status = appError.status;
      for (const [name, value] of Object.entries(appError.headers ?? {})) ctx.set(name, value);
      ctx.body = {
        error: {
          code: appError.code,
          message: appError.message,
          ...(appError.details === undefined ? {} : { details: appError.details }),
        },
      };
    }
  };
}

export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // MongoDB's error classes are precise; the Redis check goes by message text, which a MongoDB
  // error can also contain ("connect ECONNREFUSED"), so MongoDB is asked first.
  if (isMongoUnavailable(err)) return new UnavailableError('mongodb', err);
  if (isRedisUnavailable(err)) return new UnavailableError('redis', err);
  const e = err as {
    status?: number;
    statusCode?: number;
    expose?: boolean;
    type?: string;
    message?: string;
  };
  const status = e.status ?? e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413) {
      return new AppError(413, 'payload_too_large', 'The request body is larger than this route accepts.');
    }
    if (status === 400 && (e.type === 'entity.parse.failed' || /JSON/i.test(e.message ?? ''))) {
      return new AppError(400, 'invalid_request', 'The request body is not valid JSON.');
    }
    const code = CODE_BY_STATUS[status] ?? 'invalid_request';
    return new AppError(
      status,
      code,
      e.expose === true && e.message ? e.message : 'The request was not accepted.',
    );
  }
  return new AppError(500, 'internal_error', 'Something went wrong on our side; it has been logged.');
}
