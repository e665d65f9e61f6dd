import koaCors from '@koa/cors';
import type { Context, Middleware } from 'koa';
import { bearerToken } from '../../core/domain/access/authenticate.js';
import { widgetTokenOrigin } from '../../core/domain/access/widget-token.js';
import { findWidgetKeyByKey } from '../../core/domain/widget/widget-keys.js';
import { observeChangeEpoch } from '../../core/platform/db/read-cache.js';
import type { Services } from '../../core/wiring/services.js';
import { koaPath, type AnyRoute } from '../route.js';

// CORS (docs/authentication.md#cors): every answer comes from @koa/cors with these options; only
// the origin function differs. Never credentials (the API takes bearer tokens, never cookies),
// always `Vary: Origin`. Who is answered:
// - the origins in CORS_ORIGINS (a firm's dashboard), on every API route;
// - on the widget routes (the chat routes, which take a widget token, and the session and
//   challenge routes, which take a publishable key), the origins of the token or key in use. A
//   preflight carries neither, so any origin's preflight is answered there, from memory without
//   a lookup, and the origin is enforced on the real request (no CORS headers, and the route's
//   own 403 origin_not_allowed);
// - public files (the widget's script, embedded with `crossorigin` and SRI): `*`.
// Bull Board never: it is mounted before this middleware and answers its own paths.

const OPTIONS = {
  allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key'],
  exposeHeaders: ['Retry-After', 'X-Next-Cursor', 'X-Request-Id'],
  maxAge: 600,
  credentials: false,
  keepHeadersOnError: true,
};

const corsWith = (origin: (ctx: Context) => Promise<string>): Middleware => koaCors({ ...OPTIONS, origin });

/** How a route answers CORS, besides CORS_ORIGINS. */
type CorsKind = 'widgetToken' | 'widgetKey' | 'public';

const kindOf = (route: AnyRoute): CorsKind | undefined =>
  route.cors ?? (route.auth.kind === 'token' && route.auth.acceptWidget === true ? 'widgetToken' : undefined);

interface Entry {
  method: string;
  path: RegExp;
  kind: CorsKind;
}

/** The routes that answer more than CORS_ORIGINS, matched by method and path as the router would. */
function table(routes: AnyRoute[]): Entry[] {
  return routes.flatMap((route) => {
    const kind = kindOf(route);
    if (kind === undefined) return [];
    const pattern = koaPath(route.path)
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    return [{ method: route.method, path: new RegExp(`^${pattern}$`), kind }];
  });
}

/** The page origin a widget key's token was issued to (a signature check, no lookup), if any. */
function tokenOrigin(ctx: Context, services: Services): Promise<string | undefined> {
  const token = bearerToken(ctx.get('Authorization') || undefined);
  return token === null
    ? Promise.resolve(undefined)
    : widgetTokenOrigin(token, services.config.sessionSecret);
}

/**
 * The app-wide CORS middleware (api/app.ts). `routed` says whether any route has a path (as the
 * router matches it): a path no route has gets no CORS answer, so its preflight is the 404 every
 * other method on it gets.
 */
export function apiCors(
  routes: AnyRoute[],
  services: Services,
  routed: (path: string) => boolean,
): Middleware {
  const entries = table(routes);
  const dashboards = new Set(services.config.corsOrigins ?? []);
  return corsWith(async (ctx) => {
    const origin = ctx.get('Origin');
    if (origin === '' || !routed(ctx.path)) return '';
    const requested = ctx.get('Access-Control-Request-Method').toUpperCase();
    const preflight = ctx.method === 'OPTIONS' && requested !== '';
    const method = preflight ? requested : ctx.method === 'HEAD' ? 'GET' : ctx.method;
    const kind = entries.find((e) => e.method === method && e.path.test(ctx.path))?.kind;
    if (kind === 'public') return '*';
    if (dashboards.has(origin)) return origin;
    if (kind === undefined) return '';
    if (preflight) return origin;
    if (kind === 'widgetToken') return (await tokenOrigin(ctx, services)) === origin ? origin : '';
    // A key route: its key is in the body, read only further down (widgetKeyCors).
    return '';
  });
}

/** The publishable key a request names: `?key=` or the JSON body's `key`. */
function requestKey(ctx: Context): string | undefined {
  const fromQuery = ctx.query.key;
  if (typeof fromQuery === 'string') return fromQuery;
  const body = (ctx.request as { body?: unknown }).body;
  const fromBody = typeof body === 'object' && body !== null ? (body as { key?: unknown }).key : undefined;
  return typeof fromBody === 'string' ? fromBody : undefined;
}

/**
 * CORS for a route that takes a publishable widget key, once its body is read: the key's
 * allowed origins, as the key stands now (the change epoch is observed first, as the route does).
 */
export function widgetKeyCors(services: Services): Middleware {
  return corsWith(async (ctx) => {
    const origin = ctx.get('Origin');
    const key = requestKey(ctx);
    if (origin === '' || key === undefined) return '';
    await observeChangeEpoch(services.mongo.db);
    const doc = await findWidgetKeyByKey(services.mongo.db, key);
    return doc !== null && doc.allowed_origins.includes(origin) ? origin : '';
  });
}
