import { Readable } from 'node:stream';
import type { Static } from '@sinclair/typebox';
import { requireListFirm } from '../../../core/domain/access/access.js';
import type { DialDecisionDoc } from '../../../core/domain/compliance/dial-decisions.js';
import {
  listDecisions,
  streamDecisions,
  type DecisionFilter,
} from '../../../core/domain/compliance/decisions-list.js';
import { defineRoute } from '../../route.js';
import {
  DecisionRecord,
  ExportDecisionsQuery,
  ListDecisionsQuery,
  ListDecisionsResponse,
} from './decisions-schema.js';

const tag = 'Compliance';

function decisionView(d: DialDecisionDoc): Static<typeof DecisionRecord> {
  return {
    id: d._id,
    firm: d.firm,
    phone: d.phone,
    call_id: d.call_id,
    campaign_id: d.campaign_id,
    stage: d.stage,
    answer: d.answer,
    reason: d.reason,
    message: d.message,
    retry_at: d.retry_at === null ? null : d.retry_at.toISOString(),
    rules_version: d.rules_version,
    region: d.region,
    limited_by: d.limited_by,
    zones: d.zones,
    attempts: d.attempts,
    attempts_cap: d.attempts_cap,
    consent:
      d.consent === null || d.consent === undefined
        ? null
        : {
            ...d.consent,
            obtained_at:
              d.consent.obtained_at === null ? null : new Date(d.consent.obtained_at).toISOString(),
          },
    at: d.at.toISOString(),
  };
}

function filterOf(query: { phone?: string; from?: string; to?: string }): DecisionFilter {
  return {
    ...(query.phone === undefined ? {} : { phone: query.phone }),
    ...(query.from === undefined ? {} : { from: new Date(query.from) }),
    ...(query.to === undefined ? {} : { to: new Date(query.to) }),
  };
}

const CSV_COLUMNS = [
  'at',
  'id',
  'phone',
  'call_id',
  'campaign_id',
  'stage',
  'answer',
  'reason',
  'retry_at',
  'attempts',
  'attempts_cap',
  'region',
  'limited_by',
  'zones',
  'rules_version',
  'message',
] as const;

/** A CSV field: quoted when it holds a comma, quote or line break; a leading =+-@ is defused. */
function csvField(value: unknown): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvRow(d: Static<typeof DecisionRecord>): string {
  const cells: Record<(typeof CSV_COLUMNS)[number], unknown> = {
    ...d,
    limited_by: d.limited_by.join(' '),
    zones: d.zones.map((z) => `${z.zone} ${z.local} ${z.allowed ? 'allowed' : 'outside'}`).join('; '),
  };
  return `${CSV_COLUMNS.map((c) => csvField(cells[c])).join(',')}\n`;
}

export const decisionRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/compliance/decisions',
    operationId: 'listDialDecisions',
    summary:
      "The dial gate's decisions for a firm, newest first (one per decision: its answer, reason, zones and local times, attempts counted); keyset pages",
    tag,
    auth: { kind: 'token' },
    query: ListDecisionsQuery,
    response: ListDecisionsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listDecisions(services, firm._id, filterOf(query), query.limit, query.cursor);
      return { decisions: page.decisions.map(decisionView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/compliance/decisions/export',
    operationId: 'exportDialDecisions',
    summary: "The dial gate's decisions for a firm, newest first, streamed whole as NDJSON or CSV",
    tag,
    auth: { kind: 'token' },
    query: ExportDecisionsQuery,
    // NDJSON by default, CSV with format=csv.
    responseContentType: ['application/x-ndjson', 'text/csv'],
    errors: [403, 404],
    handler: async ({ services, principal, query, koa }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const cursor = streamDecisions(services, firm._id, filterOf(query));
      const csv = query.format === 'csv';
      async function* lines(): AsyncGenerator<string> {
        try {
          if (csv) yield `${CSV_COLUMNS.join(',')}\n`;
          for await (const doc of cursor) {
            const view = decisionView(doc);
            yield csv ? csvRow(view) : `${JSON.stringify(view)}\n`;
          }
        } finally {
          await cursor.close();
        }
      }
      koa.type = csv ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8';
      koa.set(
        'Content-Disposition',
        `attachment; filename="dial-decisions-${firm._id}.${csv ? 'csv' : 'ndjson'}"`,
      );
      koa.body = Readable.from(lines());
      return undefined;
    },
  }),
];
