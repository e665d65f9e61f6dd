import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { AppError } from '../../core/platform/errors.js';

/**
 * Methods a path does not have, in the error shape (never a 500): a method the path lacks is
 * 405 method_not_allowed, a method no route has (TRACE, PROPFIND, QUERY, ...) is 501
 * not_implemented; both carry Allow with the path's methods. OPTIONS on a known path is
 * answered by the router: 200 with Allow.
 */
export function allowedMethods(router: Router): Middleware {
  // Sets the status and Allow, without a body. Typed for router contexts; app.use gives plain ones.
  const answer = router.allowedMethods() as unknown as Middleware;
  return async (ctx, next) => {
    await answer(ctx, next);
    if (ctx.body != null || (ctx.status !== 405 && ctx.status !== 501)) return;
    const allow = ctx.response.get('Allow');
    const headers = allow === '' ? undefined : { Allow: allow };
    if (ctx.status === 405) {
      throw new AppError(
        405,
        'method_not_allowed',
        `${ctx.method} is not allowed on this path; it allows ${allow}.`,
        undefined,
        headers,
      );
    }
    // An unknown method is a 405 too (CONTRACT §1 allows 405 or 501): to a client, and to an
    // outside fuzzer, a 5xx says the server failed, which it did not.
    throw new AppError(
      405,
      'method_not_allowed',
      `This service does not implement ${ctx.method}${allow === '' ? '' : `; this path allows ${allow}`}.`,
      undefined,
      headers,
    );
  };
}
