import { Type } from '@sinclair/typebox';
import { requireRecord } from '../../../core/domain/access/access.js';
import { findWidgetKey } from '../../../core/domain/widget/widget-keys.js';
import { embedScript, embedSnippet } from '../../../dashboard/widget/page.js';
import { defineRoute } from '../../route.js';
import { TestWidgetQuery } from '../widget/schema.js';
import { WidgetKeyParams } from './schema.js';

// GET /api/widget-keys/{id}/snippet (docs/widget.md#embed): the one <script> tag a firm pastes
// into its site for this key, pinned to widget.js's current version by its SRI hash. JSON, as
// every API answer: {html} is the tag, {src, integrity} what a host page's CSP and a
// Content-Security-Policy report need to know. The query's optional settings become the tag's
// data- attributes (the same ones, with the same checks, as the test page's).

const { firmSlug: _firmSlug, ...settings } = TestWidgetQuery.properties;
const SnippetQuery = Type.Object(settings);

const SnippetResponse = Type.Object({
  id: Type.String({ description: 'The widget key' }),
  html: Type.String({ description: 'The embed snippet: one <script> tag' }),
  src: Type.String({ description: "widget.js's current version (absolute URL)" }),
  integrity: Type.String({ description: 'Its Subresource Integrity value, sha384-…' }),
});

export const widgetKeySnippetRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/widget-keys/{id}/snippet',
    operationId: 'getWidgetKeySnippet',
    summary:
      "The embed snippet for a widget key: one <script src integrity crossorigin data-key … async> tag for a page on one of the key's allowed origins",
    tag: 'Widget',
    auth: { kind: 'token' },
    params: WidgetKeyParams,
    query: SnippetQuery,
    response: SnippetResponse,
    errors: [404],
    handler: async ({ services, principal, params, query }) => {
      const doc = requireRecord(principal, await findWidgetKey(services.mongo.db, params.id), 'widget_key');
      const script = embedScript(services.config.publicBaseUrl);
      return {
        id: doc._id,
        html: embedSnippet(script, doc.key, query),
        src: script.src,
        integrity: script.integrity,
      };
    },
  }),
];
