import type { Context } from 'koa';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { ApiPrincipal, Principal } from '../core/domain/access/principal.js';
import type { Services } from '../core/wiring/services.js';
import type { Logger } from '../core/platform/logger.js';
import type { DefaultedKind } from './schemas/common.js';

// A route is declared once: its schemas validate requests, type the handler and
// produce the OpenAPI document (api/openapi.ts); api/router.ts mounts it on Koa.

type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How a webhook delivery's body proved itself: its signature matched (`signed`: the delivery
 * counts against the firm's webhook limit), or it is one the receiver lets in without a valid
 * signature (`unsigned`: Cal.com's PING, which does nothing; it counts against the sender's
 * address, as a 401 does).
 */
export type BodyProof = 'signed' | 'unsigned';

/**
 * How a webhook delivery was authenticated before its body was read: a bearer token (done), or
 * a signature header whose form and timestamp checked out, and which `verifyBody` checks over
 * the raw body once it is read.
 */
/** A request body as received: its bytes, or its text. */
export type RawBody = string | Buffer;

export interface WebhookCredentials {
  principal: Principal;
  /** The firm whose webhook rate limit the delivery counts against (a signed one once verified). */
  firm: string;
  /**
   * The check over the raw body (the bytes as read for a large body, else the text): false (or a
   * thrown 401) refuses the delivery.
   */
  verifyBody?: (rawBody: RawBody) => Promise<BodyProof | false>;
  /**
   * A signature whose firm does not exist or has no key of the sender's: it cannot match, so a
   * large body is read without being kept, under no byte budget, then answered as a mismatch.
   */
  stranger?: boolean;
  /**
   * Set once the body verified with a key the sender signs every firm's deliveries with (the
   * platform's RETELL_API_KEY), not with one of this firm's: the route checks the delivery is the firm's.
   */
  sharedKey?: boolean;
}

/**
 * none: no token (health, docs); token: a valid platform or firm token (a widget token only
 * where the route opts in with `acceptWidget`, the chat routes: elsewhere it is a 403; `basic`
 * also takes the token as an HTTP basic-auth password, for pages a browser opens); platform: the
 * platform key or a platform session only; webhook: the route checks what it can before reading
 * the body (the firm, a bearer token, or a signature header's form and freshness), then the
 * signature over the raw body.
 */
type AuthMode =
  | { kind: 'none' }
  | { kind: 'token'; acceptWidget?: boolean; basic?: boolean }
  | { kind: 'platform' }
  | { kind: 'webhook'; authenticate: (ctx: Context, services: Services) => Promise<WebhookCredentials> };

interface HandlerContext<B, Q, P, Who extends Principal> {
  services: Services;
  principal: Who;
  body: B;
  query: Q;
  params: P;
  log: Logger;
  koa: Context;
}

type StaticOr<S, Fallback> = S extends TSchema ? Static<S> : Fallback;

/** The keys of an object schema whose values the validator fills in when absent (`Defaulted`). */
type DefaultedKeys<S> =
  S extends TObject<infer P>
    ? { [K in keyof P]: P[K] extends { [DefaultedKind]: true } ? K : never }[keyof P]
    : never;

/** A body or query as the handler receives it: validated, its defaults applied. */
type Received<S, Fallback> = S extends TSchema
  ? Static<S> & Required<Pick<Static<S>, DefaultedKeys<S> & keyof Static<S>>>
  : Fallback;

/**
 * What a handler may return: its 200 response schema's type, or undefined when it wrote the
 * response itself (HTML, JSON text, a 202); only undefined for a route with no response schema.
 */
type ResponseOf<R> = R extends TSchema ? Static<R> | undefined : undefined;

/** The properties of `A` that `E` has no place for, however deep (never when there are none). */
type ExtraFields<A, E> = 0 extends 1 & E
  ? never // E is any
  : unknown extends E
    ? never // E is unknown: anything goes
    : A extends readonly (infer AItem)[]
      ? E extends readonly (infer EItem)[]
        ? ExtraFields<AItem, EItem>
        : never
      : A extends object
        ? ExtraFieldsOfObject<A, MatchingMember<A, E>>
        : never;
/** The members of a union `E` that `A` is one of (Nullable(...), a union of record shapes). */
type MatchingMember<A, E> = E extends unknown ? (A extends E ? E : never) : never;
type ExtraFieldsOfObject<A, E> = {
  [K in keyof A]-?: K extends keyof E ? ExtraFields<A[K], E[K]> : K;
}[keyof A];

/**
 * TypeScript checks a handler's return against the schema's type only for assignability: a
 * field the schema lacks would slip through (and be sent, unless the schema strips it). This
 * makes it an error naming the field.
 */
type NoExtraFields<H, R> = [ExtraFields<H, ResponseOf<R>>] extends [never]
  ? unknown
  : { 'the handler returns fields its response schema lacks': ExtraFields<H, ResponseOf<R>> };

/** Who a route's handler may see: a widget principal only on routes that accept one. */
type PrincipalOf<A extends AuthMode> = A extends { acceptWidget: true } ? Principal : ApiPrincipal;

interface RouteDefinition<
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
  A extends AuthMode = AuthMode,
  R extends TSchema | undefined = TSchema | undefined,
  H = unknown,
> {
  method: HttpMethod;
  /** OpenAPI-style path, e.g. /api/firms/{slug}. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  auth: A;
  body?: B;
  query?: Q;
  params?: P;
  /** The 200 response schema (JSON); omitted for non-JSON responses. */
  response?: R;
  /** The 202 response schema, for a route that may answer "accepted, still processing" (the handler sets it). */
  accepted?: TSchema;
  /** The 200 response's media type (default JSON), or each of them when the route answers several. */
  responseContentType?: string | string[];
  /** Error statuses this route may return besides 400/401/429/503 (for the OpenAPI document). */
  errors?: number[];
  /** Body size limit, e.g. '16mb'; default 2mb. */
  bodyLimit?: string;
  /**
   * A webhook whose bodies may be large (the call webhook, docs/webhooks.md#large-bodies): up to this
   * many bytes, read under the process's byte budget into one buffer, the signature checked before
   * the body is parsed (api/middleware/webhook-body.ts). Replaces `bodyLimit`; webhook routes only.
   */
  largeBodyBytes?: number;
  /**
   * The route keeps the client's JSON as JSON text (workflows' nodes and edges), so it accepts
   * what every other route refuses because a database field could not hold it or code could
   * misread it: the NUL character in strings (PostgreSQL-backed stores refuse it) and
   * "__proto__" keys (then an ordinary own key, as JSON.parse makes it). The route's schema must
   * still refuse NUL in any field it stores as a document field.
   */
  verbatimJson?: boolean;
  /** Headers of the 200 response, for the OpenAPI document (e.g. a next-page cursor). */
  responseHeaders?: Record<string, { description: string; schema: TSchema }>;
  /** Optional request headers the route reads (e.g. Idempotency-Key), for the OpenAPI document. */
  requestHeaders?: Record<string, { description: string; schema: TSchema }>;
  /**
   * CORS besides CORS_ORIGINS (api/middleware/cors.ts): `widgetKey`, the origins of the publishable
   * widget key the request names (?key= or the body's key); `public`, any origin (`*`: a file meant
   * to be embedded by other sites). Routes accepting a widget token answer its origin without this.
   */
  cors?: 'widgetKey' | 'public';
  /** Per-principal rate limiting (default on for token routes). */
  rateLimited?: boolean;
  /**
   * Every request counts against the client address's window for the routes that take no token
   * (`OPEN_ROUTE_RATE_LIMIT_PER_MINUTE`, api/middleware/rate-limit.ts), whatever it is answered.
   */
  addressLimited?: boolean;
  handler: (
    ctx: HandlerContext<
      Received<B, undefined>,
      Received<Q, Record<string, never>>,
      StaticOr<P, Record<string, never>>,
      PrincipalOf<A>
    >,
  ) => Promise<H>;
}

// Handlers are type-checked at definition; the router only needs the erased shape.
export type AnyRoute = RouteDefinition<
  TSchema | undefined,
  TSchema | undefined,
  TSchema | undefined,
  AuthMode,
  TSchema | undefined,
  unknown
>;

/**
 * Declares a route. The handler's return type is checked against the response schema: a
 * missing or mistyped field, or one the schema lacks, fails `npm run typecheck`.
 */
export function defineRoute<
  B extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  P extends TSchema | undefined = undefined,
  const A extends AuthMode = AuthMode,
  R extends TSchema | undefined = undefined,
  H extends ResponseOf<R> = ResponseOf<R>,
>(def: RouteDefinition<B, Q, P, A, R, H> & NoExtraFields<H, R>): AnyRoute {
  return def as unknown as AnyRoute;
}

/** /api/v2/{firm}/webhook → /api/v2/:firm/webhook */
export function koaPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}
