import { Type } from '@sinclair/typebox';
import type { Db } from 'mongodb';
import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import { getFirmAgent } from '../../../core/domain/agents/agents.js';
import { originProblem } from '../../../core/platform/origins.js';
import {
  createWidgetKey,
  deleteWidgetKey,
  findWidgetKey,
  listWidgetKeys,
  updateWidgetKey,
  type WidgetKeyDoc,
} from '../../../core/domain/widget/widget-keys.js';
import { invalidRequest } from '../../../core/platform/errors.js';
import { defineRoute } from '../../route.js';
import { widgetKeyView } from './present.js';
import {
  CreateWidgetKeyBody,
  ListWidgetKeysQuery,
  ListWidgetKeysResponse,
  PatchWidgetKeyBody,
  WidgetKeyParams,
  WidgetKeyResponse,
} from './schema.js';

const tag = 'Widget';

/** 400 naming each origin a browser would write otherwise (a default port, say): it would never match. */
function checkOrigins(origins: string[] | undefined): void {
  if (origins === undefined) return;
  const details = origins.flatMap((origin, i) => {
    const problem = originProblem(origin);
    return problem === null ? [] : [{ path: `/allowed_origins/${i}`, message: problem }];
  });
  if (details.length > 0)
    throw invalidRequest('Each allowed origin must be exactly scheme://host[:port].', details);
}

/** The key, if the principal's firm owns it: another firm's is a 404 as if it did not exist. */
const requireWidgetKey = async (db: Db, principal: ApiPrincipal, id: string): Promise<WidgetKeyDoc> =>
  requireRecord(principal, await findWidgetKey(db, id), 'widget_key');

export const widgetKeyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/widget-keys',
    operationId: 'createWidgetKey',
    summary:
      "Create a publishable widget key (iwpk_…) for the firm's website: the origins whose pages may ask for a widget token, an optional default agent and ALTCHA challenge",
    tag,
    auth: { kind: 'token' },
    body: CreateWidgetKeyBody,
    response: WidgetKeyResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      const db = services.mongo.db;
      const firm = await requireFirm(db, principal, body.firmSlug);
      checkOrigins(body.allowed_origins);
      const agentId = body.agent_id ?? null;
      if (agentId !== null) await getFirmAgent(db, firm._id, agentId);
      const doc = await createWidgetKey(db, firm._id, {
        name: body.name,
        allowed_origins: body.allowed_origins,
        agent_id: agentId,
        challenge: body.challenge ?? null,
      });
      return widgetKeyView(doc);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/widget-keys',
    operationId: 'listWidgetKeys',
    summary: "A firm's widget keys, newest first (the publishable keys included); keyset pagination",
    tag,
    auth: { kind: 'token' },
    query: ListWidgetKeysQuery,
    response: ListWidgetKeysResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listWidgetKeys(
        services.mongo.db,
        services.config.sessionSecret,
        firm._id,
        query.limit,
        query.cursor,
      );
      return { widget_keys: page.keys.map(widgetKeyView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/widget-keys/{id}',
    operationId: 'getWidgetKey',
    summary: 'Read one widget key',
    tag,
    auth: { kind: 'token' },
    params: WidgetKeyParams,
    response: WidgetKeyResponse,
    errors: [404],
    handler: async ({ services, principal, params }) =>
      widgetKeyView(await requireWidgetKey(services.mongo.db, principal, params.id)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/api/widget-keys/{id}',
    operationId: 'updateWidgetKey',
    summary:
      'Change a widget key (name, allowed_origins, agent_id, challenge); effective on the next request on every web process',
    tag,
    auth: { kind: 'token' },
    params: WidgetKeyParams,
    body: PatchWidgetKeyBody,
    response: WidgetKeyResponse,
    errors: [404],
    handler: async ({ services, principal, params, body }) => {
      const db = services.mongo.db;
      const doc = await requireWidgetKey(db, principal, params.id);
      checkOrigins(body.allowed_origins);
      if (body.agent_id !== undefined && body.agent_id !== null)
        await getFirmAgent(db, doc.firm, body.agent_id);
      const next = await updateWidgetKey(db, doc, {
        ...(body.name === undefined ? {} : { name: body.name }),
        ...(body.allowed_origins === undefined ? {} : { allowed_origins: body.allowed_origins }),
        ...(body.agent_id === undefined ? {} : { agent_id: body.agent_id }),
        ...(body.challenge === undefined ? {} : { challenge: body.challenge }),
      });
      return widgetKeyView(next);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/widget-keys/{id}',
    operationId: 'deleteWidgetKey',
    summary: 'Delete a widget key: the next session request with it is refused, on every web process',
    tag,
    auth: { kind: 'token' },
    params: WidgetKeyParams,
    response: Type.Object({ id: Type.String(), deleted: Type.Boolean() }),
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const db = services.mongo.db;
      await deleteWidgetKey(db, await requireWidgetKey(db, principal, params.id));
      return { id: params.id, deleted: true };
    },
  }),
];
