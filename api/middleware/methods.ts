import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { AppError } from '../../core/platform/errors.js';

/**
 * Methods a path does not have, in the error shape (never a 500). On a path some route has, a
 * method it lacks is 405 method_not_allowed with Allow listing the path's methods, and so is a
 * method no route has (TRACE, PROPFIND, QUERY, ...): to a client and to an outside fuzzer a 5xx
 * would say the server failed, which it did not. On a path no route has, every method is 404
 * (errorHandler renders it): a 405 must carry Allow (RFC 9110 §15.5.6), and such a path allows
 * nothing. OPTIONS on a known path is answered by the router: 200 with Allow.
 */
export function allowedMethods(router: Router): Middleware {
  // Sets the status and Allow, without a body. Typed for router contexts; app.use gives plain ones.
  const answer = router.allowedMethods() as unknown as Middleware;
  return async (ctx, next) => {
    await answer(ctx, next);
    if (ctx.body != null || (ctx.status !== 405 && ctx.status !== 501)) return;
    const allow = ctx.response.get('Allow');
    if (allow === '') {
      // The router answers an unknown method 501 whether or not any route has the path.
      ctx.remove('Allow');
      ctx.status = 404;
      return;
    }
    const message =
      ctx.status === 405
        ? `${ctx.method} is not allowed on this path; it allows ${allow}.`
        : `This service does not implement ${ctx.method}; this path allows ${allow}.`;
    throw new AppError(405, 'method_not_allowed', message, undefined, { Allow: allow });
  };
}
