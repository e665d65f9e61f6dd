import type { Middleware } from 'koa';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { AppError } from '../core/platform/errors.js';
import { safeEqual } from '../core/platform/crypto.js';
import { authenticateBearer } from '../core/domain/access/authenticate.js';
import type { Services } from '../core/wiring/services.js';

export const BULL_BOARD_PATH = '/admin/queues';

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
    options: { uiConfig: { boardTitle: 'Intake queues' } },
  });
  const board = serverAdapter.registerPlugin();
  return async (ctx, next) => {
    if (ctx.path !== BULL_BOARD_PATH && !ctx.path.startsWith(`${BULL_BOARD_PATH}/`)) return next();
    const header = ctx.get('Authorization');
    const password = basicPassword(header);
    if (password !== null) {
      if (!safeEqual(password, services.config.adminApiKey)) throw challenge();
    } else if (header === '') {
      throw challenge();
    } else {
      const principal = await authenticateBearer(header, services.config, services.mongo.db);
      if (principal.kind !== 'platform') {
        throw new AppError(403, 'forbidden', 'Only the platform key may open the queue dashboard.');
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
