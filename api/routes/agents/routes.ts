import { Type } from '@sinclair/typebox';
import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import {
  requireFirm,
  requireListFirm,
  requirePlatform,
  requireRecord,
} from '../../../core/domain/access/access.js';
import {
  createAgent,
  deleteAgent,
  findAgent,
  listAgents,
  updateAgent,
  type AgentDoc,
} from '../../../core/domain/agents/agents.js';
import type { Services } from '../../../core/wiring/services.js';
import { defineRoute } from '../../route.js';
import { agentListEntry, agentView } from './present.js';
import {
  AgentListEntry,
  AgentParams,
  AgentResponse,
  CreateAgentBody,
  ListAgentsQuery,
  UpdateAgentBody,
} from './schema.js';

const tag = 'Agent Config';

const requireAgent = async (
  services: Services,
  principal: ApiPrincipal,
  agentId: string,
): Promise<AgentDoc> => requireRecord(principal, await findAgent(services.mongo.db, agentId), 'agent');

/**
 * provider_agent_id names an agent on the shared provider account, any firm's: a firm token
 * may not set it or change it (sending the stored value back is no change), the platform may.
 */
function assertMaySetProviderAgentId(
  principal: ApiPrincipal,
  sent: string | undefined,
  current?: AgentDoc,
): void {
  if (sent === undefined) return;
  if (current !== undefined && sent === current.provider_agent_id) return;
  requirePlatform(principal, 'Only the platform key may set or change provider_agent_id.');
}

export const agentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/v2/list-agents',
    operationId: 'listAgents',
    summary:
      'List agents, newest first: all firms for the platform, its own for a firm token; ?firmSlug= filters; X-Next-Cursor continues the list',
    tag,
    auth: { kind: 'token' },
    query: ListAgentsQuery,
    response: Type.Array(AgentListEntry),
    responseHeaders: {
      'X-Next-Cursor': {
        description: 'Present when more agents follow: send it back as ?cursor= for the next page',
        schema: Type.String(),
      },
    },
    errors: [403, 404],
    handler: async ({ services, principal, query, koa }) => {
      const db = services.mongo.db;
      // Unlike the other lists, the platform without firmSlug sees every firm's agents
      // (docs/authentication.md#which-firm-a-list-is-for).
      const everyFirm = query.firmSlug === undefined && principal.kind === 'platform';
      const firm = everyFirm ? undefined : (await requireListFirm(db, principal, query.firmSlug))._id;
      const page = await listAgents(services, firm, query.limit, query.cursor);
      if (page.next_cursor !== '') koa.set('X-Next-Cursor', page.next_cursor);
      return page.agents.map(agentListEntry);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v2/create-agent',
    operationId: 'createAgent',
    summary:
      'Create an agent (voice must be one of list-voices: 400 unknown_voice; provider_agent_id: platform key only)',
    tag,
    auth: { kind: 'token' },
    body: CreateAgentBody,
    response: AgentResponse,
    errors: [403, 404, 502],
    handler: async ({ services, principal, body }) => {
      const { firmSlug, ...input } = body;
      const firm = await requireFirm(services.mongo.db, principal, firmSlug);
      assertMaySetProviderAgentId(principal, input.provider_agent_id);
      return agentView(await createAgent(services, firm._id, input));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v2/get-agent/{agent_id}',
    operationId: 'getAgent',
    summary: 'Read an agent',
    tag,
    auth: { kind: 'token' },
    params: AgentParams,
    response: AgentResponse,
    errors: [404],
    handler: async ({ services, principal, params }) =>
      agentView(await requireAgent(services, principal, params.agent_id)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/api/v2/update-agent/{agent_id}',
    operationId: 'updateAgent',
    summary: 'Change an agent (provider_agent_id: platform key only)',
    tag,
    auth: { kind: 'token' },
    params: AgentParams,
    body: UpdateAgentBody,
    response: AgentResponse,
    errors: [403, 404, 502],
    handler: async ({ services, principal, params, body }) => {
      const agent = await requireAgent(services, principal, params.agent_id);
      assertMaySetProviderAgentId(principal, body.provider_agent_id, agent);
      return agentView(await updateAgent(services, agent, body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/v2/delete-agent/{agent_id}',
    operationId: 'deleteAgent',
    summary: 'Delete an agent (calls and chats already made keep their records)',
    tag,
    auth: { kind: 'token' },
    params: AgentParams,
    response: Type.Object({ agent_id: Type.String(), deleted: Type.Boolean() }),
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const agent = await requireAgent(services, principal, params.agent_id);
      await deleteAgent(services.mongo.db, agent);
      return { agent_id: agent._id, deleted: true };
    },
  }),
];
