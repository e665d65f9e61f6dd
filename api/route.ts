import type { Context } from 'koa';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Principal } from '../core/domain/access/principal.js';
import type { Services } from '../core/wiring/services.js';
import type { Logger } from '../core/platform/logger.js';

// A route is declared once: its schemas validate requests, type the handler and
// produce the OpenAPI document (api/openapi.ts); api/router.ts mounts it on Koa.

type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How a webhook delivery was authenticated before its body was read: a bearer token (done), or
 * a signature header whose form, timestamp and firm secret checked out, and whose HMAC over the
 * raw body `verifyBody` checks once the body is read.
 */
export interface WebhookCredentials {
  principal: Principal;
  /** The firm whose webhook rate limit the delivery counts against. */
  firm: string;
  verifyBody?: (rawBody: string) => Promise<boolean>;
}

/**
 * none: no token (health, docs); token: any valid token; platform: the platform key or a
 * platform session only; webhook: the route checks what it can before reading the body
 * (the firm, a bearer token, or a signature header's form and freshness), then the signature
 * over the raw body.
 */
type AuthMode =
  | { kind: 'none' }
  | { kind: 'token' }
  | { kind: 'platform' }
  | { kind: 'webhook'; authenticate: (ctx: Context, services: Services) => Promise<WebhookCredentials> };

interface HandlerContext<B, Q, P> {
  services: Services;
  principal: Principal;
  body: B;
  query: Q;
  params: P;
  log: Logger;
  koa: Context;
}

type StaticOr<S, Fallback> = S extends TSchema ? Static<S> : Fallback;

interface RouteDefinition<
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
> {
  method: HttpMethod;
  /** OpenAPI-style path, e.g. /api/firms/{slug}. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  auth: AuthMode;
  body?: B;
  query?: Q;
  params?: P;
  /** The 200 response schema (JSON); omitted for non-JSON responses. */
  response?: TSchema;
  /** The 202 response schema, for a route that may answer "accepted, still processing" (the handler sets it). */
  accepted?: TSchema;
  responseContentType?: string;
  /** Error statuses this route may return besides 400/401/429/503 (for the OpenAPI document). */
  errors?: number[];
  /** Body size limit, e.g. '16mb'; default 2mb. */
  bodyLimit?: string;
  /** Per-principal rate limiting (default on for token routes). */
  rateLimited?: boolean;
  handler: (
    ctx: HandlerContext<
      StaticOr<B, undefined>,
      StaticOr<Q, Record<string, never>>,
      StaticOr<P, Record<string, never>>
    >,
  ) => Promise<unknown>;
}

// Handlers are type-checked at definition; the router only needs the erased shape.
export type AnyRoute = RouteDefinition<TSchema | undefined, TSchema | undefined, TSchema | undefined>;

export function defineRoute<
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
>(def: RouteDefinition<B, Q, P>): AnyRoute {
  return def as unknown as AnyRoute;
}

/** /api/v2/{firm}/webhook → /api/v2/:firm/webhook */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}
