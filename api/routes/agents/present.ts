import type { Static } from '@sinclair/typebox';
import type { AgentDoc } from '../../../core/domain/agents/agents.js';
import type { AgentListEntry, AgentResponse } from './schema.js';

export function agentListEntry(agent: AgentDoc): Static<typeof AgentListEntry> {
  return {
    agent_id: agent._id,
    agent_name: agent.agent_name,
    firm: agent.firm,
    voice_id: agent.voice_id,
    language: agent.language,
    created_at: agent.created_at.toISOString(),
  };
}

export function agentView(agent: AgentDoc): Static<typeof AgentResponse> {
  return {
    ...agentListEntry(agent),
    prompt: agent.prompt,
    begin_message: agent.begin_message,
    intake_questions: agent.intake_questions,
    provider_agent_id: agent.provider_agent_id ?? null,
    updated_at: agent.updated_at.toISOString(),
  };
}
