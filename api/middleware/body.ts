import type { Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import { AppError } from '../../core/platform/errors.js';

export const DEFAULT_BODY_LIMIT = '2mb';

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (headers['transfer-encoding'] !== undefined) return true;
  return length !== undefined && length !== '0';
}

/** JSON bodies only (415 otherwise), with a size limit (413) and the raw text kept for signatures. */
export function jsonBody(limit: string = DEFAULT_BODY_LIMIT): Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: limit,
    strict: true,
    extendTypes: { json: ['application/json', 'application/*+json'] },
    onerror: (err) => {
      throw err;
    },
  });
  return async (ctx, next) => {
    if (
      ['POST', 'PUT', 'PATCH'].includes(ctx.method) &&
      hasBody(ctx.req.headers) &&
      !ctx.is('json', '+json')
    ) {
      throw new AppError(
        415,
        'unsupported_media_type',
        'Send the body as JSON with Content-Type: application/json.',
      );
    }
    await parse(ctx, next);
  };
}
