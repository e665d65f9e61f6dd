import type { Middleware } from 'koa';
import {
  AppError,
  UnavailableError,
  clip,
  internalError,
  invalidRequest,
  notFound,
  payloadTooLarge,
  isMongoUnavailable,
  isRedisUnavailable,
  type ErrorDetail,
} from '../../core/platform/errors.js';
import type { Logger } from '../../core/platform/logger.js';
import { answer } from '../answer.js';

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

/**
 * The one top-level catch: every failure leaves in the error shape (docs/errors.md#the-error-body), never
 * a stack.
 */
export function errorHandler(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) {
        throw notFound('route', `No route matches ${ctx.method} ${clip(ctx.path)}.`);
      }
    } catch (err) {
      const appError = toAppError(err, ctx.req.destroyed || ctx.req.readableAborted);
      if (appError.status >= 500) {
        ((ctx.state.log as Logger | undefined) ?? log).error({ err }, 'request failed');
      }
      for (const [name, value] of Object.entries(appError.headers ?? {})) ctx.set(name, value);
      answer(ctx, appError.status, { error: errorBody(appError) });
    }
  };
}

/**
 * A response lists at most this many details (docs/errors.md#limits-on-every-request); the message says
 * how many more.
 */
const MAX_DETAILS = 50;

/** The error body; the one place errors are rendered, so the one place details are capped. */
export function errorBody(e: AppError): { code: string; message: string; details?: ErrorDetail[] } {
  // Named fields an error carries beside its details (dial_deferred's retry_at).
  const extra = e.fields ?? {};
  if (e.details === undefined) return { code: e.code, message: e.message, ...extra };
  if (e.details.length <= MAX_DETAILS) {
    return { code: e.code, message: e.message, details: e.details, ...extra };
  }
  const more = e.details.length - MAX_DETAILS;
  return {
    code: e.code,
    message: `${e.message} The details list the first ${MAX_DETAILS} problems; ${more.toLocaleString('en-US')} more are not listed.`,
    details: e.details.slice(0, MAX_DETAILS),
  };
}

/** The client went away before its body was read (raw-body's aborted / unreadable stream). */
const CLIENT_GONE = new Set(['request.aborted', 'stream.not.readable']);

/** What a failure is answered as: an AppError as it is, a library's 4xx mapped, anything else a 500. */
export function toAppError(err: unknown, clientGone = false): AppError {
  if (err instanceof AppError) return err;
  // Not a failure here: the answer reaches no one, so it is a 400 and not logged as an error.
  if (clientGone && CLIENT_GONE.has(String((err as { type?: unknown }).type))) {
    return invalidRequest(
      'The client closed the request before its body was read.',
      undefined,
      'request_aborted',
    );
  }
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
      return payloadTooLarge();
    }
    if (status === 400 && /forbidden prototype property/.test(e.message ?? '')) {
      // The JSON parser refuses a "__proto__" key (prototype poisoning), at any depth.
      return invalidRequest(
        'The request body may not contain a "__proto__" key; rename or remove that field.',
      );
    }
    if (status === 400 && (e.type === 'entity.parse.failed' || /JSON/i.test(e.message ?? ''))) {
      // The parser takes an object or an array only: a string, a number or null is JSON, but
      // not a request body, and saying "not valid JSON" of it misleads.
      if (/only supports object and array/.test(e.message ?? '')) {
        return invalidRequest('The request body must be a JSON object.');
      }
      return invalidRequest('The request body is not valid JSON.');
    }
    const code = CODE_BY_STATUS[status] ?? 'invalid_request';
    return new AppError(
      status,
      code,
      // A library's message can carry request text (a charset, an encoding): clipped.
      e.expose === true && e.message ? clip(e.message) : 'The request was not accepted.',
    );
  }
  return internalError();
}
