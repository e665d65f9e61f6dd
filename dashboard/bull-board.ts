import type { Context, Middleware } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { AppError, forbidden } from '../core/platform/errors.js';
import { safeEqual } from '../core/platform/crypto.js';
import { authenticateBearer } from '../core/domain/access/authenticate.js';
import type { Services } from '../core/wiring/services.js';

const BULL_BOARD_PATH = '/admin/queues';

// Bull Board's page links a Google Fonts stylesheet; an operator's browser should not reach
// out from an admin page (and offline it would only stall), so everything stays on this origin.
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');
const EXTERNAL_STYLESHEET = /<link[^>]+href="https?:\/\/[^"]*"[^>]*rel="stylesheet"[^>]*>/g;

// Forgery (CONTRACT §4). A browser that has opened the board sends the cached basic-auth
// credentials with any request to it, including a form another site auto-submits, and Bull
// Board parses form and text bodies into nested objects. So every request that can change
// something must come from the board's own page (Origin, or Sec-Fetch-Site: same-origin) and
// carry JSON, which a page elsewhere cannot send without a CORS preflight we never answer.
// Checked before the credentials and before Bull Board parses anything.
const SAFE_METHODS = new Set(['GET', 'HEAD']);

// Adding a job from the board is no operator need, and its payload is whatever the caller
// writes: a call-events job naming any firm becomes that firm's call. Bull Board 9.10.1 has no
// switch for it (readOnlyMode would also take retry, clean and promote away), so the route is
// refused here for everyone, before parsing; its router matches paths case-insensitively.
const ADD_JOB_ROUTE = '/api/queues/:queueName/add';
const ADD_JOB_PATH = /^\/+api\/+queues\/+[^/]+\/+add\/*$/i;

/** The origin `url` names, or null when it is not an http(s) URL. */
function originOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : null;
  } catch {
    return null;
  }
}

/** Throws 403 unless a state-changing request comes from the board's own page, with JSON. */
function refuseForgery(ctx: Context, publicOrigin: string | null): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  // Browsers set Sec-Fetch-Site themselves; when present it decides (a same-site page on
  // another port or subdomain is still someone else's). Otherwise Origin must be ours: the
  // origin this request was addressed to (behind the proxy, as Koa reports it) or PUBLIC_BASE_URL.
  const site = ctx.get('Sec-Fetch-Site').toLowerCase();
  const origin = ctx.get('Origin');
  const sameOrigin =
    site !== ''
      ? site === 'same-origin'
      : origin !== '' &&
        origin !== 'null' &&
        (origin === publicOrigin || origin === originOf(`${ctx.protocol}://${ctx.host}`));
  if (!sameOrigin) {
    throw new AppError(
      403,
      'forbidden',
      "The queue dashboard only takes changes from its own page (Origin or Sec-Fetch-Site must be this service's).",
    );
  }
  const type = ctx.get('Content-Type').split(';')[0]!.trim().toLowerCase();
  const length = ctx.get('Content-Length');
  const hasBody = ctx.get('Transfer-Encoding') !== '' || (length !== '' && length !== '0');
  if ((hasBody || type !== '') && type !== 'application/json') {
    throw forbidden('The queue dashboard only takes JSON bodies.');
  }
  const rest = ctx.path.slice(BULL_BOARD_PATH.length);
  if (ctx.method === 'POST' && (ADD_JOB_PATH.test(rest) || ADD_JOB_PATH.test(safeDecode(rest)))) {
    throw forbidden('Jobs cannot be added from the queue dashboard.');
  }
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The password of an HTTP basic Authorization header (any user name), or null. */
function basicPassword(header: string): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? null : decoded.slice(colon + 1);
}

/**
 * Bull Board over every queue, for the platform only: the platform key as bearer, or as the
 * password of HTTP basic auth so that a person can open it in a browser.
 */
export function bullBoard(services: Services): Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: Object.values(services.queues).map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: {
      uiConfig: { boardTitle: 'Intake queues' },
      // A second lock on adding jobs, keyed on the board's own route rather than on the path
      // we see: should a spelling of the path get past ADD_JOB_PATH, the handler still refuses.
      handlerHooks: {
        before: ({ route }) =>
          route === ADD_JOB_ROUTE
            ? { allow: false, status: 403, message: 'Jobs cannot be added from the queue dashboard.' }
            : undefined,
      },
    },
  });
  const board = serverAdapter.registerPlugin();
  const publicOrigin = originOf(services.config.publicBaseUrl);
  return async (ctx, next) => {
    if (ctx.path !== BULL_BOARD_PATH && !ctx.path.startsWith(`${BULL_BOARD_PATH}/`)) return next();
    refuseForgery(ctx, publicOrigin);
    const header = ctx.get('Authorization');
    const password = basicPassword(header);
    if (password !== null) {
      if (!safeEqual(password, services.config.adminApiKey)) throw challenge();
    } else if (header === '') {
      throw challenge();
    } else {
      const principal = await authenticateBearer(header, services.config, services.mongo.db);
      if (principal.kind !== 'platform') {
        throw forbidden('Only the platform key may open the queue dashboard.');
      }
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', CSP);
    await board(ctx, next);
    if (typeof ctx.body === 'string' && ctx.response.is('html'))
      ctx.body = ctx.body.replace(EXTERNAL_STYLESHEET, '');
  };
}

function challenge(): AppError {
  return new AppError(
    401,
    'unauthorized',
    'Sign in with the platform key (as bearer, or as the basic-auth password).',
    undefined,
    {
      'WWW-Authenticate': 'Basic realm="Intake queues", charset="UTF-8"',
    },
  );
}
