import { requireFirm } from '../../../core/domain/access/access.js';
import { firmOfAgent, prepareWidgetSession } from '../../../core/domain/widget/widget-session.js';
import { listWidgetKeys } from '../../../core/domain/widget/widget-keys.js';
import { renderTestWidgetPage } from '../../../dashboard/widget/page.js';
import { defineRoute } from '../../route.js';
import { widgetFileRoutes } from './files.js';
import { TestWidgetQuery } from './schema.js';

const tag = 'Utilities';

export const widgetRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/test-widget',
    operationId: 'testWidget',
    summary:
      "The chat widget test page (HTML): the widget with a one-hour widget token for the firm's chat routes, and a settings panel producing the embed snippet. " +
      'A platform or firm token, as bearer or as the password of HTTP basic auth (so a browser can open it); ' +
      'a firm token opens its own firm without firmSlug; the platform without firmSlug gets a page that says what to pass. A widget token is refused (403)',
    tag,
    // Not acceptWidget: a widget token must not mint its own successor.
    auth: { kind: 'token', basic: true },
    query: TestWidgetQuery,
    responseContentType: 'text/html',
    errors: [403, 404],
    handler: async ({ services, principal, query, koa }) => {
      const slug =
        query.firmSlug ??
        (principal.kind === 'firm' ? principal.firm : await firmOfAgent(services, query.agentId));
      const firm = slug === undefined ? undefined : await requireFirm(services.mongo.db, principal, slug);
      const session = await prepareWidgetSession(services, firm, query);
      // The panel shows the snippet of the firm's newest widget key (docs/widget.md#embed).
      const newest =
        firm === undefined
          ? undefined
          : (await listWidgetKeys(services.mongo.db, services.config.sessionSecret, firm._id, 1, undefined))
              .keys[0];
      const page = renderTestWidgetPage({
        session,
        settings: query,
        publicBaseUrl: services.config.publicBaseUrl,
        snippetKey: newest === undefined ? null : { id: newest._id, name: newest.name, key: newest.key },
      });
      koa.set('Content-Security-Policy', page.contentSecurityPolicy);
      // The page carries a credential: never stored, never framed, never named in a Referer.
      koa.set('Cache-Control', 'no-store');
      koa.set('Referrer-Policy', 'no-referrer');
      koa.set('X-Frame-Options', 'DENY');
      koa.set('Cross-Origin-Opener-Policy', 'same-origin');
      koa.set('Cross-Origin-Resource-Policy', 'same-origin');
      koa.type = 'text/html; charset=utf-8';
      koa.body = page.html;
      return undefined;
    },
  }),
  ...widgetFileRoutes,
];
