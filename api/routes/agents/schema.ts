import { Type } from '@sinclair/typebox';
import { Body, Cursor, FirmSlug, Id, Limit, Timestamp } from '../../schemas/common.js';

const IntakeQuestions = Type.Array(
  Type.Object(
    {
      key: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
      question: Type.String({ minLength: 1, maxLength: 500 }),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: 50,
    description:
      'Questions the intake agent asks, in order. Keys are unique: a repeated key is 400 invalid_request.',
    // The same rule for tools: no two items share a `key` (JSON Schema has no keyword for it).
    'x-unique-by': 'key',
  },
);

const AgentFields = {
  agent_name: Type.String({ minLength: 1, maxLength: 200 }),
  voice_id: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'A voice_id of GET /api/v2/list-voices; any other is 400 unknown_voice',
  }),
  language: Type.String({
    pattern: '^[a-z]{2,3}(?:-[A-Z]{2})?$',
    description: 'Locale tag; defaults to the voice language',
  }),
  prompt: Type.String({ maxLength: 20_000 }),
  begin_message: Type.String({ maxLength: 2000 }),
  intake_questions: IntakeQuestions,
  provider_agent_id: Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: '^\\S+$',
    description:
      "The agent's id at the voice provider (Retell's agent_id); Retell calls use it as override_agent_id. Only the platform key may set or change it (403 for firm tokens)",
  }),
};

export const CreateAgentBody = Body({
  firmSlug: FirmSlug,
  agent_name: AgentFields.agent_name,
  voice_id: AgentFields.voice_id,
  language: Type.Optional(AgentFields.language),
  prompt: Type.Optional(AgentFields.prompt),
  begin_message: Type.Optional(AgentFields.begin_message),
  intake_questions: Type.Optional(AgentFields.intake_questions),
  provider_agent_id: Type.Optional(AgentFields.provider_agent_id),
});

export const UpdateAgentBody = Body({
  agent_name: Type.Optional(AgentFields.agent_name),
  voice_id: Type.Optional(AgentFields.voice_id),
  language: Type.Optional(AgentFields.language),
  prompt: Type.Optional(AgentFields.prompt),
  begin_message: Type.Optional(AgentFields.begin_message),
  intake_questions: Type.Optional(AgentFields.intake_questions),
  provider_agent_id: Type.Optional(AgentFields.provider_agent_id),
});

export const AgentParams = Type.Object({ agent_id: Id });
export const ListAgentsQuery = Type.Object({
  firmSlug: Type.Optional(FirmSlug),
  limit: Limit(5000, 1000, 'At most this many agents; X-Next-Cursor is set when more follow'),
  cursor: Cursor('The X-Next-Cursor header of the previous page'),
});

export const AgentListEntry = Type.Object({
  agent_id: Type.String(),
  agent_name: Type.String(),
  firm: Type.String(),
  voice_id: Type.String(),
  language: Type.String(),
  created_at: Timestamp,
});

export const AgentResponse = Type.Object({
  ...AgentListEntry.properties,
  prompt: Type.String(),
  begin_message: Type.String(),
  intake_questions: IntakeQuestions,
  provider_agent_id: Type.Union([Type.String(), Type.Null()]),
  updated_at: Timestamp,
});
