import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { createRequire } from 'node:module';
import type { Context } from 'koa';
import { AppError, UnavailableError, notFound, serviceUnavailable } from '../../../core/platform/errors.js';
import { authenticateRequest } from '../../router.js';
import { pingMongo } from '../../../core/platform/db/mongo.js';
import { clioClientAlert, clioClientAlertText } from '../../../core/domain/crm/clio-client-alert.js';
import type { Services } from '../../../core/wiring/services.js';
import type { HttpMetrics } from '../../metrics.js';
import { defineRoute, type AnyRoute } from '../../route.js';
import { buildOpenApiDocument } from '../../openapi.js';

const tag = 'Operations';
const require = createRequire(import.meta.url);
// The package's folder, found without loading its index: that requires the 1.4 MB browser bundle
// into the web's heap (about 0.45 s of CPU at every start), which is only ever served as a file.
const swaggerUiDir = dirname(require.resolve('swagger-ui-dist/package.json'));
// A Map, not an object: an asset name from the path ("__proto__", "constructor") must not
// find Object.prototype's members.
const DOC_ASSETS = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'application/javascript; charset=utf-8'],
]);

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Intake Service API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script></body></html>`;
const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`;
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'";

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Lifecycle {
  shuttingDown: boolean;
}

async function checkReadiness(services: Services): Promise<{ redis: string; mongodb: string }> {
  const [redis, mongodb] = await Promise.allSettled([
    withTimeout(services.redis.ping(), 2000),
    withTimeout(pingMongo(services.mongo), 2500),
  ]);
  return {
    redis: redis.status === 'fulfilled' ? 'ok' : `unreachable: ${(redis.reason as Error).message}`,
    mongodb: mongodb.status === 'fulfilled' ? 'ok' : `unreachable: ${(mongodb.reason as Error).message}`,
  };
}

/** Whether the request carries the platform key (or a platform session); never an error. */
async function isPlatform(koa: Context, services: Services): Promise<boolean> {
  if (koa.get('Authorization') === '') return false;
  try {
    return (await authenticateRequest(koa, services)).kind === 'platform';
  } catch {
    return false;
  }
}

export function opsRoutes(deps: { metrics: HttpMetrics; lifecycle: Lifecycle; allRoutes: () => AnyRoute[] }) {
  let openApi: Record<string, unknown> | undefined;
  const common = { tag, auth: { kind: 'none' as const }, rateLimited: false };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'The process is up',
      response: Type.Object({ status: Type.Literal('ok') }),
      handler: async () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/readyz',
      operationId: 'readyz',
      summary:
        'Redis and MongoDB are reachable (503 otherwise, and while shutting down); for the platform key only, which of them is down and, with Clio OAuth configured, whether Clio accepts the service’s client credentials',
      response: Type.Object({
        status: Type.Literal('ready'),
        redis: Type.Optional(Type.String()),
        mongodb: Type.Optional(Type.String()),
        clio_oauth: Type.Optional(Type.String()),
      }),
      handler: async ({ services, koa }) => {
        if (deps.lifecycle.shuttingDown) {
          throw new AppError(503, 'unavailable', 'The process is shutting down.', undefined, {
            'Retry-After': '5',
          });
        }
        const checks = await checkReadiness(services);
        const down = Object.entries(checks).filter(([, v]) => v !== 'ok');
        // Which store is down, and why, tells an attacker when the limits kept in Redis are
        // weakest: only the platform sees it; anyone else, ready or not.
        const detailed = await isPlatform(koa, services);
        if (down.length > 0) {
          const error = new UnavailableError(down[0]![0] as 'redis' | 'mongodb');
          if (!detailed) throw serviceUnavailable('The service is not ready; retry shortly.', 5);
          throw new AppError(
            error.status,
            error.code,
            error.message,
            down.map(([k, v]) => ({ path: `/${k}`, message: v })),
            error.headers,
          );
        }
        if (!detailed) return { status: 'ready' as const };
        // Clio refusing the service's client credentials is an alert, not unreadiness: this
        // process serves everything else, and restarting it would not fix Clio's answer.
        if (services.config.clioClientId === undefined) return { status: 'ready' as const, ...checks };
        const alert = await clioClientAlert(services.mongo.db);
        return { status: 'ready' as const, ...checks, clio_oauth: clioClientAlertText(alert) };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/metrics',
      operationId: 'metrics',
      summary:
        'Prometheus metrics: HTTP latency, queue depth, job outcomes per queue; with the platform key, also the series per firm (OpenAI spend today)',
      responseContentType: 'text/plain',
      handler: async ({ services, koa }) => {
        koa.type = deps.metrics.registry.contentType;
        const shown = await deps.metrics.registry.metrics();
        // The series per firm name the firms: the platform's only (HttpMetrics.firmRegistry).
        koa.body = (await isPlatform(koa, services))
          ? shown + (await deps.metrics.firmRegistry.metrics())
          : shown;
        return undefined;
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/openapi.json',
      operationId: 'openapi',
      summary: 'This OpenAPI 3.1 document',
      // The document describes itself loosely (no response schema): it is written as it is.
      handler: async ({ services, koa }) => {
        koa.body = openApi ??= buildOpenApiDocument(deps.allRoutes(), services.config.publicBaseUrl);
        return undefined;
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/docs',
      operationId: 'docs',
      summary: 'API reference page (works offline)',
      responseContentType: 'text/html',
      handler: async ({ koa }) => {
        koa.set('Content-Security-Policy', DOCS_CSP);
        koa.type = 'text/html; charset=utf-8';
        koa.body = DOCS_HTML;
        return undefined;
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: '/docs/assets/{file}',
      operationId: 'docsAsset',
      summary: 'Static assets of the API reference page',
      params: Type.Object({ file: Type.String({ maxLength: 64 }) }),
      responseContentType: 'application/javascript',
      errors: [404],
      handler: async ({ koa, params }) => {
        koa.set('Cache-Control', 'public, max-age=3600');
        if (params.file === 'init.js') {
          koa.type = 'application/javascript; charset=utf-8';
          koa.body = DOCS_INIT;
          return undefined;
        }
        const type = DOC_ASSETS.get(params.file);
        if (type === undefined) throw notFound('asset', 'No such documentation asset.');
        koa.type = type;
        koa.body = await readFile(join(swaggerUiDir, params.file));
        return undefined;
      },
    }),
  ];
}
