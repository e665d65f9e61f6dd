import type { Context } from 'koa';
import { notFound } from '../../../core/platform/errors.js';
import { WIDGET_ASSET_NAMES, widgetAsset, type WidgetAsset } from '../../../dashboard/widget/assets.js';
import { defineRoute } from '../../route.js';
import { WidgetFileParams } from './schema.js';

// The widget's files (docs/widget.md#files): /widget/v/<version>/<name> is the current version,
// immutable (an embed pins it with SRI); /widget/<name> is the latest under a short cache.
// Another version's path is a 404: a process serves only the bytes it holds.

const tag = 'Utilities';
const YEAR_SECONDS = 365 * 24 * 60 * 60;

function send(koa: Context, asset: WidgetAsset, cacheControl: string): undefined {
  koa.set('Cache-Control', cacheControl);
  koa.set('ETag', `"${asset.version}"`);
  // widget.js is meant to be embedded by other sites' pages (with crossorigin, for SRI: the
  // routes' `cors: 'public'` answers Access-Control-Allow-Origin: *).
  koa.set('Cross-Origin-Resource-Policy', 'cross-origin');
  koa.type = asset.contentType;
  koa.status = 200; // Koa judges freshness only for a 2xx
  if (koa.fresh) {
    koa.status = 304;
    return undefined;
  }
  koa.body = asset.body;
  return undefined;
}

/** Two routes per widget file, so the OpenAPI document gives each its own content type. */
export const widgetFileRoutes = WIDGET_ASSET_NAMES.flatMap((name) => {
  const operation = name.replace(/[^a-z]+/g, '_');
  const contentType = widgetAsset(name)!.contentType.split(';')[0];
  return [
    defineRoute({
      method: 'GET',
      path: `/widget/v/{version}/${name}`,
      operationId: `widgetFileVersion_${operation}`,
      summary: `The chat widget's file ${name} at one version (immutable: cached for a year; another version than the current one is a 404)`,
      tag,
      auth: { kind: 'none' },
      cors: 'public',
      rateLimited: false,
      params: WidgetFileParams,
      responseContentType: contentType,
      errors: [404],
      handler: async ({ params, koa }) => {
        const asset = widgetAsset(name)!;
        if (params.version !== asset.version) {
          throw notFound(
            'widget_version',
            `This server serves ${name} only at its current version; the embed snippet (GET /api/widget-keys/{id}/snippet) names it.`,
          );
        }
        return send(koa, asset, `public, max-age=${YEAR_SECONDS}, immutable`);
      },
    }),
    defineRoute({
      method: 'GET',
      path: `/widget/${name}`,
      operationId: `widgetFile_${operation}`,
      summary: `The chat widget's file ${name}, its current version (cached for five minutes)`,
      tag,
      auth: { kind: 'none' },
      cors: 'public',
      rateLimited: false,
      responseContentType: contentType,
      handler: async ({ koa }) => send(koa, widgetAsset(name)!, 'public, max-age=300'),
    }),
  ];
});
