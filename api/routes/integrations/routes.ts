import { requireFirm } from '../../../core/domain/access/access.js';
import {
  confirmClioConnect,
  receiveClioCallback,
  startClioConnect,
} from '../../../core/domain/crm/clio-connection.js';
import {
  browserKeyOf,
  connectCookie,
  cookieValue,
  setCookieHeader,
} from '../../../core/domain/crm/connect-cookie.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import { forbidden, invalidRequest } from '../../../core/platform/errors.js';
import type { Services } from '../../../core/wiring/services.js';
import type { Context } from 'koa';
import { defineRoute } from '../../route.js';
import { cancelledPage, confirmationPage, connectedPage, sendPage, withErrorPage } from './pages.js';
import { ClioCallbackQuery, ClioConfirmQuery, ClioConnectQuery } from './schema.js';

// Clio connected with OAuth (docs/clio.md#connected-with-oauth): the connect link a firm's browser opens
// (which gives that browser the connect cookie the flow is bound to), the callback Clio sends it back
// to (PUBLIC_BASE_URL/api/integrations/clio/callback, the redirect URL to register in the Clio
// developer application), which shows the firm and the Clio account to confirm, and the
// confirmation. The callback and the confirmation answer a browser with pages, errors included.

const tag = 'Integrations';

/** The connect cookie the browser sent, if any. */
const browserKey = (services: Services, koa: Context) =>
  cookieValue(koa.get('Cookie') || undefined, connectCookie(services.config.publicBaseUrl).name);

const firmName = async (services: Services, slug: string) =>
  (await getFirm(services.mongo.db, slug))?.name ?? slug;

export const integrationRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/integrations/clio/connect',
    operationId: 'connectClio',
    summary:
      "Start connecting a firm's Clio with OAuth: 302 to Clio's authorize page (platform or that firm's token, as bearer or as the password of HTTP basic auth, so a browser can open it), " +
      'with the connect cookie the flow is bound to (HttpOnly, SameSite=Lax; `__Host-` and Secure behind https). ' +
      '409 clio_oauth_not_configured when CLIO_CLIENT_ID/CLIO_CLIENT_SECRET are unset',
    tag,
    auth: { kind: 'token', basic: true },
    query: ClioConnectQuery,
    responseContentType: 'text/html',
    errors: [403, 404, 409],
    handler: async ({ services, principal, query, koa }) => {
      const firm = await requireFirm(services.mongo.db, principal, query.firmSlug);
      const { key } = browserKeyOf(browserKey(services, koa));
      const location = await startClioConnect(services, firm._id, query.region ?? 'us', key);
      // Set each time: the 10 minutes start again with each flow the browser starts.
      koa.append('Set-Cookie', setCookieHeader(connectCookie(services.config.publicBaseUrl), key));
      koa.set('Cache-Control', 'no-store');
      koa.set('Referrer-Policy', 'no-referrer');
      koa.redirect(location);
      koa.status = 302;
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/integrations/clio/callback',
    operationId: 'clioCallback',
    summary:
      'Where Clio sends the browser back: in the browser that opened the connect link only (any other: 403, the code is not exchanged), ' +
      'exchanges the code, asks Clio whose account it is and answers a page showing the firm and the Clio account to confirm; nothing is stored yet. ' +
      'A bad, expired or used state: 400, nothing stored. Errors are pages for a browser (Accept: text/html)',
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    query: ClioCallbackQuery,
    responseContentType: 'text/html',
    errors: [403, 409, 502],
    handler: async ({ services, query, koa }) => {
      await withErrorPage(koa, async () => {
        if (query.error !== undefined) {
          throw invalidRequest(
            `Clio did not grant access (${query.error.slice(0, 100)}); start again from the connect link.`,
            [{ path: '/error', message: 'Clio answered an error instead of a code' }],
          );
        }
        if (query.code === undefined || query.state === undefined) {
          throw invalidRequest('The callback needs the code and state Clio sends.', [
            ...(query.code === undefined ? [{ path: '/code', message: 'is required' }] : []),
            ...(query.state === undefined ? [{ path: '/state', message: 'is required' }] : []),
          ]);
        }
        const pending = await receiveClioCallback(
          services,
          query.code,
          query.state,
          browserKey(services, koa),
        );
        const name = await firmName(services, pending.firm);
        sendPage(koa, 200, confirmationPage(name, pending.firm, pending.region, pending.holder, pending.id));
      });
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/integrations/clio/confirm',
    operationId: 'confirmClio',
    summary:
      "The confirmation page's answer (no body; `decision=connect` keeps the tokens as the firm's Clio connection, `cancel` drops them), " +
      'from the browser that opened the connect link only (403 otherwise, and from a page of another origin). ' +
      'Unknown, expired or used: 400. Answers a page',
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    query: ClioConfirmQuery,
    responseContentType: 'text/html',
    errors: [403],
    handler: async ({ services, query, koa }) => {
      await withErrorPage(koa, async () => {
        const own = new URL(services.config.publicBaseUrl).origin;
        const origin = koa.get('Origin');
        const site = koa.get('Sec-Fetch-Site');
        // The page's no-referrer policy makes a browser send `Origin: null` on its own form; then
        // Sec-Fetch-Site says where the post came from (and the SameSite=Lax cookie, which no
        // cross-site post carries, is checked below in any case).
        const fromOwnPage = site === 'same-origin' || (site === '' && (origin === '' || origin === own));
        if (!fromOwnPage || (origin !== '' && origin !== own && origin !== 'null')) {
          throw forbidden('Confirm from the page this service showed after Clio, not from another site.');
        }
        const result = await confirmClioConnect(
          services,
          query.confirmation,
          browserKey(services, koa),
          query.decision,
        );
        const name = await firmName(services, result.firm);
        sendPage(
          koa,
          200,
          result.connected ? connectedPage(name, result.firm) : cancelledPage(name, result.firm),
        );
      });
      return undefined;
    },
  }),
];
