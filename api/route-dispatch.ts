import type { Layer, Router } from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import compose from 'koa-compose';

/** How many (method, path) answers are kept; all are dropped when it is full. */
const MATCHES_KEPT = 5_000;

/** What a method and path resolve to: the router's answer, and the chain to run, composed once. */
interface Resolved {
  /** Every layer whose path matches (what allowedMethods reads as `ctx.matched`). */
  matched: readonly Layer[];
  /** The matched routes of the method, each entered as @koa/router enters it; undefined when none. */
  chain: ((ctx: Context, next: Next) => Promise<unknown>) | undefined;
}

/** The request's context as @koa/router leaves it for what runs after it. */
interface RoutedContext {
  matched?: readonly Layer[];
  router?: Router;
  routeMatched?: boolean;
  captures?: string[];
  params?: Record<string, string>;
  routerPath?: string;
  routerName?: string;
  _matchedRoute?: string | RegExp;
  _matchedRouteName?: string;
}

export interface RouteDispatch {
  /** Runs the route that matches the request (what `router.routes()` does), else `next`. */
  dispatch: Middleware;
  /** Whether some route has the path, whatever its method. */
  routed: (path: string) => boolean;
}

/**
 * The router's dispatch, with nothing built per request. `router.routes()` tests every route's
 * pattern on every request (90 of them, each with a debug call), then builds an array of the
 * matched layers' middleware, flattens it and composes it anew: a chain of closures made and
 * dropped per request, for the same answer every time. Here a method and path resolve once to
 * their matched layers and a chain composed once per set of layers; each layer's entry reads
 * the path from the request, so parameters are the request's own. The context is left as the
 * router's dispatch leaves it (matched, params, captures, the matched route), which the router's
 * allowedMethods and the request's metrics read.
 */
export function routeDispatch(router: Router): RouteDispatch {
  const known = new Map<string, Resolved>();
  const chains = new Map<string, Resolved['chain']>();

  const chainOf = (layers: Layer[]): Resolved['chain'] => {
    if (layers.length === 0) return undefined;
    const key = layers.map((layer) => router.stack.indexOf(layer)).join(' ');
    let chain = chains.get(key);
    if (chain === undefined) {
      chain = compose(layers.flatMap((layer) => [enter(layer), ...(layer.stack as Middleware[])]));
      chains.set(key, chain);
    }
    return chain;
  };

  const resolve = (method: string, path: string): Resolved => {
    const key = `${method} ${path}`;
    let resolved = known.get(key);
    if (resolved === undefined) {
      const found = router.match(path, method);
      resolved = {
        matched: Object.freeze(found.path),
        chain: found.route ? chainOf(found.pathAndMethod) : undefined,
      };
      if (known.size >= MATCHES_KEPT) known.clear();
      known.set(key, resolved);
    }
    return resolved;
  };

  const dispatch: Middleware = (ctx, next) => {
    const { matched, chain } = resolve(ctx.method, ctx.path);
    const routed = ctx as unknown as RoutedContext;
    routed.matched = matched;
    routed.router = router;
    routed.routeMatched = chain !== undefined;
    // The chain's first step, a layer's entry, names the matched route.
    return chain === undefined ? next() : chain(ctx, next);
  };
  return { dispatch, routed: (path) => resolve('GET', path).matched.length > 0 };
}

/** A layer's entry, as @koa/router's dispatch makes it: the request's captures and parameters. */
function enter(layer: Layer): Middleware {
  return (ctx, next) => {
    const routed = ctx as unknown as RoutedContext;
    const captures = layer.captures(ctx.path);
    routed.captures = captures;
    const params = layer.params(ctx.path, captures, routed.params);
    (ctx.request as { params?: Record<string, string> }).params = params;
    routed.params = params;
    routed.routerPath = layer.path as string;
    routed.routerName = layer.name || undefined;
    routed._matchedRoute = layer.path;
    if (layer.name) routed._matchedRouteName = layer.name;
    return next();
  };
}
