// What GET /api/test-widget needs before it renders: the firm (the route
// checks it: firmSlug; else a firm token's own, or the platform's agentId's), its agents, the
// agent the widget starts with, and a widget token for that firm's chat routes. A token is
// minted only once the firm and an agent of it are known to exist.
import type { FirmDoc } from '../firms/firms.js';
import { findAgent, getFirmAgent, listFirmAgentNames } from '../agents/agents.js';
import { notFound } from '../../platform/errors.js';
import { mintWidgetToken } from '../access/widget-token.js';
import type { Services } from '../../wiring/services.js';

/** The most agents the page's picker lists (newest first); a requested agent is always among them. */
const MAX_AGENTS_LISTED = 200;

export interface WidgetAgent {
  agent_id: string;
  agent_name: string;
}

export type WidgetSession =
  /** The platform opened the page without ?firmSlug= or ?agentId=: the page explains what to pass. */
  | { state: 'needs_firm' }
  /** The firm has no agent to chat with yet: the page says how to create one. No token. */
  | { state: 'no_agents'; firm: string }
  | {
      state: 'ready';
      firm: string;
      agents: WidgetAgent[];
      agentId: string;
      token: string;
      tokenExpiresAt: Date;
    };

/** The platform may name just an agent: its firm is the agent's (404 for an unknown agent). */
export async function firmOfAgent(
  services: Services,
  agentId: string | undefined,
): Promise<string | undefined> {
  if (agentId === undefined) return undefined;
  const agent = await findAgent(services.mongo.db, agentId);
  if (agent === null) throw notFound('agent');
  return agent.firm;
}

export async function prepareWidgetSession(
  services: Services,
  /** The (checked) firm; undefined when the platform named neither a firm nor an agent. */
  firm: FirmDoc | undefined,
  request: { agentId?: string | undefined },
): Promise<WidgetSession> {
  const db = services.mongo.db;
  if (firm === undefined) return { state: 'needs_firm' };
  const agents = await listFirmAgentNames(db, firm._id, MAX_AGENTS_LISTED);
  let agentId = agents[0]?.agent_id;
  if (request.agentId !== undefined) {
    // 404 agent_not_found for an unknown agent or another firm's, as create-chat would answer.
    const agent = await getFirmAgent(db, firm._id, request.agentId);
    if (!agents.some((a) => a.agent_id === agent._id)) {
      agents.push({ agent_id: agent._id, agent_name: agent.agent_name });
    }
    agentId = agent._id;
  }
  if (agentId === undefined) return { state: 'no_agents', firm: firm._id };
  const minted = await mintWidgetToken(firm._id, services.config.sessionSecret);
  return {
    state: 'ready',
    firm: firm._id,
    agents,
    agentId,
    token: minted.token,
    tokenExpiresAt: minted.expiresAt,
  };
}
