import type { Context, Middleware } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { AppError, forbidden } from '../core/platform/errors.js';
import { safeEqual } from '../core/platform/crypto.js';
import { authenticateBearer, basicAuthPassword } from '../core/domain/access/authenticate.js';
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

// Adding jobs and editing a job's data are refused for everyone (below), so the board should not
// offer them: Bull Board 9.10.1 shows "Add job" in each queue's menu, "Duplicate" on each job (which
// opens the same form) and "Update Data" (a pencil) on each job, with no switch to hide them short of
// read-only mode. They are hidden by their icons, the only stable mark they carry; the queue's and a
// scheduler's own pencils (allowed edits) carry an aria-label, a job's does not
// (test/dashboard/read-only-board.test.ts checks which stay hidden).
const HIDE_REFUSED_ACTIONS_CSS =
  '<style>[role="menuitem"]:has(> svg.lucide-plus), button:has(> svg.lucide-files), ' +
  'button:not([aria-label]):has(> svg.lucide-pencil) { display: none !important; }</style>';

// Forgery (docs/operations.md#forgery). A browser that has opened the board sends the cached basic-auth
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
// Replacing a job's data is the same power as adding one (a reminder job was once given
// another firm's data), and no operator need either: refused alike, whatever the method.
const UPDATE_DATA_ROUTE = '/api/queues/:queueName/:jobId/update-data';
const UPDATE_DATA_PATH = /^\/+api\/+queues\/+[^/]+\/+[^/]+\/+update-data\/*$/i;
const JOB_DATA_REFUSAL = "A job's data cannot be changed from the queue dashboard.";

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
  const names = (pattern: RegExp): boolean => pattern.test(rest) || pattern.test(safeDecode(rest));
  if (ctx.method === 'POST' && names(ADD_JOB_PATH)) {
    throw forbidden('Jobs cannot be added from the queue dashboard.');
  }
  if (names(UPDATE_DATA_PATH)) throw forbidden(JOB_DATA_REFUSAL);
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** What an operator's credentials let them do on the board. */
type BoardAccess = 'operate' | 'read_only';

// Which board a request reaches: the platform key operates the queues; ADMIN_READONLY_API_KEY
// only looks. Both keys are compared in constant time, and both comparisons always run, so the
// time taken does not tell which key (if either) a password was close to. The platform key
// itself, not any platform principal: a platform session JWT is refused (docs/operations.md#bull-board).
async function boardAccess(ctx: Context, services: Services): Promise<BoardAccess> {
  const { adminApiKey, adminReadonlyApiKey } = services.config;
  const header = ctx.get('Authorization');
  if (header === '') throw challenge();
  const password = basicAuthPassword(header);
  const bearer = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header)?.[1] ?? null;
  const presented = password ?? bearer;
  if (presented !== null && adminReadonlyApiKey !== undefined) {
    const isPlatform = safeEqual(presented, adminApiKey);
    const isReadOnly = safeEqual(presented, adminReadonlyApiKey);
    if (isReadOnly && !isPlatform) return 'read_only';
  }
  if (password !== null) {
    if (!safeEqual(password, adminApiKey)) throw challenge();
    return 'operate';
  }
  if (bearer !== null && safeEqual(bearer, adminApiKey)) return 'operate';
  // Any other token: 401 when it is not valid at all, 403 when it is (a firm's, or a session's).
  await authenticateBearer(header, services.config, services.mongo.db);
  throw forbidden('Only the platform key (or the read-only operator key) may open the queue dashboard.');
}

/** The environment's badge: red for production, amber for staging, blue elsewhere. */
function environmentBadge(appEnv: string): { label: string; color: string; textColor: string } {
  const name = appEnv.toLowerCase();
  const color = /^prod/.test(name) ? '#b91c1c' : /^(stag|preprod|uat)/.test(name) ? '#b45309' : '#1d4ed8';
  return { label: appEnv, color, textColor: '#ffffff' };
}

const READ_ONLY_REFUSAL = 'The read-only operator key may look at the queues but not change them.';

/** One Bull Board over every queue; `readOnly` makes every queue adapter read-only. */
function mountBoard(services: Services, readOnly: boolean): Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: Object.values(services.queues).map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly })),
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: readOnly ? 'Intake queues (read-only)' : 'Intake queues',
        // The header's link to Bull Board's documentation site: an operator page links nowhere else.
        hideDocsLink: true,
        environment: environmentBadge(services.config.appEnv),
      },
      // A second lock behind the middleware's checks, keyed on the board's own route rather than
      // on the path we see: should a spelling of a path get past them, the handler still refuses
      // adding jobs and editing their data (everyone) and any change at all (the read-only board).
      handlerHooks: {
        before: ({ route, method }) => {
          if (readOnly && method !== 'get') return { allow: false, status: 403, message: READ_ONLY_REFUSAL };
          if (route === ADD_JOB_ROUTE) {
            return { allow: false, status: 403, message: 'Jobs cannot be added from the queue dashboard.' };
          }
          if (route === UPDATE_DATA_ROUTE) return { allow: false, status: 403, message: JOB_DATA_REFUSAL };
          return undefined;
        },
      },
    },
  });
  return serverAdapter.registerPlugin();
}

/**
 * Bull Board over every queue (docs/operations.md#bull-board): the platform key as bearer, or as the
 * password of HTTP basic auth so that a person can open it in a browser; ADMIN_READONLY_API_KEY (when
 * set) the same way, on a second board whose queues are read-only, and every request of that key
 * other than GET/HEAD is refused here with 403 before either board sees it.
 */
export function bullBoard(services: Services): Middleware {
  const operatorBoard = mountBoard(services, false);
  const readOnlyBoard = services.config.adminReadonlyApiKey === undefined ? null : mountBoard(services, true);
  const publicOrigin = originOf(services.config.publicBaseUrl);
  return async (ctx, next) => {
    if (ctx.path !== BULL_BOARD_PATH && !ctx.path.startsWith(`${BULL_BOARD_PATH}/`)) return next();
    refuseForgery(ctx, publicOrigin);
    const access = await boardAccess(ctx, services);
    if (access === 'read_only' && !SAFE_METHODS.has(ctx.method)) throw forbidden(READ_ONLY_REFUSAL);
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Content-Security-Policy', CSP);
    await (access === 'read_only' && readOnlyBoard !== null ? readOnlyBoard : operatorBoard)(ctx, next);
    if (typeof ctx.body === 'string' && ctx.response.is('html')) {
      ctx.body = ctx.body
        .replace(EXTERNAL_STYLESHEET, '')
        .replace('</head>', `${HIDE_REFUSED_ACTIONS_CSS}</head>`);
    }
  };
}
function challenge(): AppError {
  return new AppError(
    401,
    'unauthorized',
    'Sign in with the platform key or the read-only operator key (as bearer, or as the basic-auth password).',
    undefined,
    {
      // Bearer first, as on every 401 (the contract's challenge); a browser, which cannot answer
      // it, takes the Basic one and asks for the key.
      'WWW-Authenticate': ['Bearer', 'Basic realm="Intake queues", charset="UTF-8"'],
    },
  );
}
