import { Type } from '@sinclair/typebox';
import { requireFirm } from '../../../core/domain/access/access.js';
import {
  agentListEntry,
  agentView,
  createAgent,
  deleteAgent,
  getAgent,
  listAgents,
  updateAgent,
} from '../../../core/domain/agents/agents.js';
import { defineRoute } from '../../route.js';
import {
  AgentListEntry,
  AgentParams,
  AgentResponse,
  CreateAgentBody,
  ListAgentsQuery,
  UpdateAgentBody,
} from './schema.js';

const tag = 'Agent Config';

export const agentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/v2/list-agents',
    operationId: 'listAgents',
    summary: 'List agents: all firms for the platform, its own for a firm token; ?firmSlug= filters',
    tag,
    auth: { kind: 'token' },
    query: ListAgentsQuery,
    response: Type.Array(AgentListEntry),
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const db = services.mongo.db;
      if (query.firmSlug !== undefined) await requireFirm(db, principal, query.firmSlug);
      const firm = query.firmSlug ?? (principal.kind === 'firm' ? principal.firm : undefined);
      return (await listAgents(db, firm)).map(agentListEntry);
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
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      const { firmSlug, ...input } = body;
      await requireFirm(services.mongo.db, principal, firmSlug);
      return agentView(await createAgent(services, principal, firmSlug, input));
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
      agentView(await getAgent(services.mongo.db, principal, params.agent_id)),
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
    errors: [403, 404],
    handler: async ({ services, principal, params, body }) => {
      const agent = await getAgent(services.mongo.db, principal, params.agent_id);
      return agentView(await updateAgent(services, principal, agent, body));
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
      const agent = await getAgent(services.mongo.db, principal, params.agent_id);
      await deleteAgent(services.mongo.db, agent);
      return { agent_id: agent._id, deleted: true };
    },
  }),
];
