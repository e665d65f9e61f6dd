// The two hot routes' duties on bare node:http: everything create-outbound-call and the call
// webhook do for a request, done by the service's own functions in the route's order, with no Koa
// application, no router and no middleware chain around them. The bare handlers
// (bench/lib/bare-handlers.ts) do only the store calls (and the webhook's HMAC and parse); these
// also do what the contract and the service ask of every request besides:
//   - the request id (kept from X-Request-Id when sane) and the latency histogram;
//   - create-outbound-call: the bearer token (from the read cache), the principal's rate limit and
//     the change epoch it returns, a firm named in the query, the JSON body under its limit with the
//     NUL and depth checks (the route's own parser), the schema, and the route's handler (the
//     Idempotency-Key, the firm and agent, the dial gate, the call's insert and its job);
//   - the call webhook: the authentication before the body (the signature's form and age, the
//     firm's keys), the firm's limit and the epoch, the body under its limit, pace and budget, the
//     signature over it, the firm's count, the parse, NUL and depth checks (the route's own reader),
//     the schema, and the route's handler (the snapshot, the delivery outbox's gate, the add);
//   - the answer with the service's headers (the request id, nosniff, Vary: Origin), or a refusal
//     in the error shape, a 401 counted against the sender's address.
// So `*_duties_in_web_vs_bare_http` is what those duties cost a bare handler: a bound no route
// that does them can beat, whatever framework carries it; and `*_vs_duties_in_web` is what Koa,
// the router and the chain add to them (docs/performance.md).
import { randomUUID } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import { createMetrics } from '../../api/metrics.js';
import { jsonBody } from '../../api/middleware/body.js';
import { rateLimiterOf } from '../../api/middleware/rate-limit.js';
import { safeRequestId } from '../../api/middleware/request-context.js';
import { largeBodyBudgetsOf, largeWebhookBody } from '../../api/middleware/webhook-body.js';
import type { WebhookCredentials } from '../../api/route.js';
import { countWebhookProof, refuseOtherFirmInQuery } from '../../api/router.js';
import { authenticateCallWebhook, callWebhookRoutes } from '../../api/routes/call-webhook/routes.js';
import { callRoutes } from '../../api/routes/calls/routes.js';
import { compileValidator } from '../../api/validation.js';
import { authenticateBearer } from '../../core/domain/access/authenticate.js';
import type { ApiPrincipal } from '../../core/domain/access/principal.js';
import { enableReadCache, mustReread } from '../../core/platform/db/read-cache.js';
import { AppError } from '../../core/platform/errors.js';
import { errorBody, toAppError } from '../../api/middleware/errors.js';
import type { Services } from '../../core/wiring/services.js';

export type DutiesHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const CREATE_CALL = callRoutes.find((r) => r.operationId === 'createOutboundCall')!;
const CALL_WEBHOOK = callWebhookRoutes[0]!;
const WEBHOOK_PATH = /^\/api\/v2\/([^/]+)\/webhook$/;

/** A request as the service's functions read it (the parts of Koa's context they use), and the headers they set. */
interface View {
  ctx: Context;
  headers: Record<string, string | string[]>;
}

function viewOf(
  req: IncomingMessage,
  url: { path: string; search: string },
  params: Record<string, string>,
  requestId: string,
): View {
  const headers: View['headers'] = {};
  const get = (name: string) => String(req.headers[name.toLowerCase()] ?? '');
  const ctx = {
    req,
    method: req.method,
    path: url.path,
    ip: req.socket.remoteAddress ?? '',
    params,
    // As Koa parses it: a repeated name is an array.
    query: parseQuery(url.search),
    state: { requestId } as Record<string, unknown>,
    request: { body: undefined as unknown, get },
    get,
    set: (name: string, value: string) => {
      headers[name.toLowerCase()] = value;
    },
    // Only a Content-Type other than plain JSON is asked about; the bench sends plain JSON.
    is: () => false,
  };
  return { ctx: ctx as unknown as Context, headers };
}

/** Runs a Koa middleware of the service's over the view, and resolves once it has called on. */
async function pass(middleware: (ctx: Context, next: () => Promise<void>) => Promise<void>, ctx: Context) {
  let reached = false;
  await middleware(ctx, async () => {
    reached = true;
  });
  if (!reached) throw new Error('the middleware did not call on');
}

/** Both routes' duties, over `services` (a process's own, as the web's are). */
export function routeDuties(services: Services): DutiesHandler {
  const { config } = services;
  const db = services.mongo.db;
  const cache = enableReadCache(db);
  const metrics = createMetrics(services.queues, db, services);
  const limiter = rateLimiterOf(services);
  const budgets = largeBodyBudgetsOf(config);
  // The routes' own schemas (create-outbound-call has no path parameters).
  const createBodySchema = compileValidator(CREATE_CALL.body!, 'body');
  const webhookParams = compileValidator(CALL_WEBHOOK.params!, 'params');
  const webhookBodySchema = compileValidator(CALL_WEBHOOK.body!, 'body');
  // The routes' own body readers (api/router.ts builds them the same way).
  const createBody = jsonBody(CREATE_CALL.bodyLimit, { nul: 'reject' });
  const webhookBody = largeWebhookBody(
    CALL_WEBHOOK.largeBodyBytes!,
    budgets,
    config.webhookBodyMinBytesPerSecond,
    (ctx) => countWebhookProof(ctx, budgets, limiter),
  );

  const createCall = async ({ ctx }: View): Promise<unknown> => {
    const authenticate = () =>
      authenticateBearer(ctx.get('Authorization') || undefined, config, db, {
        acceptWidget: false,
        basic: false,
      });
    const before = cache.currentEpoch;
    let principal: ApiPrincipal = await authenticate();
    const epoch = await limiter.checkPrincipal(principal);
    cache.observeEpoch(epoch);
    if (mustReread(before, epoch)) principal = await authenticate();
    ctx.state.principal = principal;
    refuseOtherFirmInQuery(ctx, principal);
    await pass(createBody, ctx);
    const body = createBodySchema((ctx.request as { body?: unknown }).body ?? {});
    return CREATE_CALL.handler({
      services,
      principal,
      body: body as never,
      query: {} as never,
      params: {} as never,
      log: services.log,
      koa: ctx,
    });
  };

  const callWebhook = async ({ ctx }: View): Promise<unknown> => {
    ctx.params = webhookParams({ ...ctx.params }) as Record<string, string>;
    const before = cache.currentEpoch;
    let credentials: WebhookCredentials = await authenticateCallWebhook(ctx, services);
    const epoch = await limiter.checkWebhook(credentials.firm, credentials.verifyBody === undefined);
    cache.observeEpoch(epoch);
    if (mustReread(before, epoch)) credentials = await authenticateCallWebhook(ctx, services);
    ctx.state.principal = credentials.principal;
    ctx.state.webhook = credentials;
    await pass(webhookBody, ctx);
    const body = webhookBodySchema((ctx.request as { body?: unknown }).body ?? {});
    (ctx.request as { body?: unknown }).body = undefined;
    return CALL_WEBHOOK.handler({
      services,
      principal: credentials.principal as ApiPrincipal,
      body: body as never,
      query: {} as never,
      params: ctx.params as never,
      log: services.log,
      koa: ctx,
    });
  };

  return async (req, res) => {
    const started = process.hrtime.bigint();
    const requestId = safeRequestId(String(req.headers['x-request-id'] ?? '')) ?? randomUUID();
    const [path = '', search = ''] = (req.url ?? '').split('?', 2);
    const hook = WEBHOOK_PATH.exec(path);
    const params: Record<string, string> = hook === null ? {} : { firm: decodeURIComponent(hook[1]!) };
    const view = viewOf(req, { path, search }, params, requestId);
    let label = 'unmatched';
    let status = 200;
    let answer: unknown;
    try {
      if (limiter.refusesAnyAddress && req.headers.authorization === undefined) {
        limiter.assertAddressAllowed(view.ctx.ip);
      }
      if (req.method === 'POST' && path === '/api/v2/create-outbound-call') {
        label = '/api/v2/create-outbound-call';
        answer = await createCall(view);
      } else if (req.method === 'POST' && hook !== null) {
        label = '/api/v2/:firm/webhook';
        answer = await callWebhook(view);
      } else {
        throw new AppError(404, 'not_found', `No route matches ${req.method} ${path}.`);
      }
    } catch (err) {
      let e = toAppError(err, req.destroyed || req.readableAborted);
      // A 401 counts against the sender's address (api/middleware/rate-limit.ts, unauthenticatedLimit).
      if (e.status === 401) {
        const ip = view.ctx.ip;
        e = (await limiter.countUnauthenticated(ip).catch(() => null)) ?? limiter.refusalFor(ip) ?? e;
      }
      status = e.status;
      for (const [name, value] of Object.entries(e.headers ?? {})) view.headers[name.toLowerCase()] = value;
      answer = { error: errorBody(e) };
      // A refused body may still be arriving: let it go, as Koa does once it has answered.
      req.resume();
    }
    const text = JSON.stringify(answer);
    res.writeHead(status, {
      ...view.headers,
      vary: 'Origin',
      'x-request-id': requestId,
      'x-content-type-options': 'nosniff',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
    });
    res.end(text);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    metrics.httpDuration.observe({ method: req.method ?? '', route: label, status: String(status) }, seconds);
  };
}
