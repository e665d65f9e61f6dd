import { requireFirm } from '../../../core/domain/access/access.js';
import { finishClioConnect, startClioConnect } from '../../../core/domain/crm/clio-connection.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import { invalidRequest } from '../../../core/platform/errors.js';
import { escapeHtml } from '../../../core/platform/html.js';
import { defineRoute } from '../../route.js';
import { ClioCallbackQuery, ClioConnectQuery } from './schema.js';

// Clio connected with OAuth (docs/clio.md#connected-with-oauth): the connect link a firm's browser opens,
// and the callback Clio sends it back to (PUBLIC_BASE_URL/api/integrations/clio/callback, the redirect
// URL to register in the Clio developer application).

const tag = 'Integrations';

const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function connectedPage(firmName: string, slug: string): string {
  const name = escapeHtml(firmName);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Clio connected</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem}</style></head>
<body><h1>Clio connected</h1>
<p id="connected">${name} (<code>${escapeHtml(slug)}</code>) is connected to Clio. New intakes will be added to Clio as contacts with a matter.</p>
<p>You can close this page.</p></body></html>
`;
}

export const integrationRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/integrations/clio/connect',
    operationId: 'connectClio',
    summary:
      "Start connecting a firm's Clio with OAuth: 302 to Clio's authorize page (platform or that firm's token, as bearer or as the password of HTTP basic auth, so a browser can open it). " +
      '409 clio_oauth_not_configured when CLIO_CLIENT_ID/CLIO_CLIENT_SECRET are unset',
    tag,
    auth: { kind: 'token', basic: true },
    query: ClioConnectQuery,
    responseContentType: 'text/html',
    errors: [403, 404, 409],
    handler: async ({ services, principal, query, koa }) => {
      const firm = await requireFirm(services.mongo.db, principal, query.firmSlug);
      const location = await startClioConnect(services, firm._id, query.region ?? 'us');
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
      "Where Clio sends the firm's browser back: exchanges the code, keeps the tokens (never shown) and answers a page saying the firm is connected. " +
      'A bad, expired or used state: 400, nothing stored',
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    query: ClioCallbackQuery,
    responseContentType: 'text/html',
    errors: [409, 502],
    handler: async ({ services, query, koa }) => {
      if (query.error !== undefined) {
        throw invalidRequest(
          `Clio did not grant access (${query.error}); start again from the connect link.`,
          [{ path: '/error', message: 'Clio answered an error instead of a code' }],
        );
      }
      if (query.code === undefined || query.state === undefined) {
        throw invalidRequest('The callback needs the code and state Clio sends.', [
          ...(query.code === undefined ? [{ path: '/code', message: 'is required' }] : []),
          ...(query.state === undefined ? [{ path: '/state', message: 'is required' }] : []),
        ]);
      }
      const slug = await finishClioConnect(services, query.code, query.state);
      const firm = await getFirm(services.mongo.db, slug);
      koa.set('Content-Security-Policy', PAGE_CSP);
      koa.set('Cache-Control', 'no-store');
      koa.set('Referrer-Policy', 'no-referrer');
      koa.set('X-Frame-Options', 'DENY');
      koa.type = 'text/html; charset=utf-8';
      koa.body = connectedPage(firm?.name ?? slug, slug);
      return undefined;
    },
  }),
];
