import { requireFirm } from '../../../core/domain/access/access.js';
import { firmOfAgent, prepareWidgetSession } from '../../../core/domain/widget/widget-session.js';
import { WIDGET_ASSET_NAMES, widgetAsset } from '../../../dashboard/widget/assets.js';
import { renderTestWidgetPage } from '../../../dashboard/widget/page.js';
import { defineRoute } from '../../route.js';
import { TestWidgetQuery, WidgetAssetQuery } from './schema.js';

const tag = 'Utilities';
const YEAR_SECONDS = 365 * 24 * 60 * 60;

/** One route per widget file, so the OpenAPI document gives each its own content type. */
const assetRoutes = WIDGET_ASSET_NAMES.map((name) =>
  defineRoute({
    method: 'GET',
    path: `/widget/${name}`,
    operationId: `widgetFile_${name.replace(/[^a-z]+/g, '_')}`,
    summary: `The chat widget's file ${name}; with ?v= naming the current version it may be cached for a year`,
    tag,
    auth: { kind: 'none' },
    // Embedded by firms' pages with `crossorigin` and SRI: readable from any origin.
    cors: 'public',
    rateLimited: false,
    query: WidgetAssetQuery,
    responseContentType: widgetAsset(name)!.contentType.split(';')[0],
    handler: async ({ query, koa }) => {
      const asset = widgetAsset(name)!;
      koa.set(
        'Cache-Control',
        query.v === asset.version ? `public, max-age=${YEAR_SECONDS}, immutable` : 'public, max-age=300',
      );
      koa.set('ETag', `"${asset.version}"`);
      // widget.js is meant to be embedded by other sites' pages.
      koa.set('Cross-Origin-Resource-Policy', 'cross-origin');
      koa.type = asset.contentType;
      koa.status = 200; // Koa judges freshness only for a 2xx
      if (koa.fresh) {
        koa.status = 304;
        return undefined;
      }
      koa.body = asset.body;
      return undefined;
    },
  }),
);

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
      const page = renderTestWidgetPage({
        session,
        settings: query,
        publicBaseUrl: services.config.publicBaseUrl,
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
  ...assetRoutes,
];
