import { Type } from '@sinclair/typebox';
import { Body, DynamicVariables, FirmSlug, Id, Timestamp } from '../../schemas/common.js';
import { IntakeEffects } from '../calls/schema.js';

export const CreateChatBody = Body({
  agentId: Id,
  firmSlug: FirmSlug,
  dynamicVariables: Type.Optional(DynamicVariables),
});

export const ChatCompletionBody = Body({
  chatId: Id,
  // At least one character that is not white space.
  message: Type.String({ minLength: 1, maxLength: 4000, pattern: '\\S' }),
});

export const EndChatBody = Body({ chatId: Id });

export const ChatParams = Type.Object({ chat_id: Id });

const ChatStatus = Type.Union([Type.Literal('ongoing'), Type.Literal('ended')]);
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const CreateChatResponse = Type.Object({
  chat_id: Type.String(),
  agent_id: Type.String(),
  status: Type.Literal('ongoing'),
  message: Type.Optional(Type.String({ description: "The agent's first message" })),
});

export const ChatCompletionResponse = Type.Object({
  message: Type.String({ description: "The agent's reply" }),
});

export const EndChatResponse = Type.Object({ chat_id: Type.String(), status: Type.Literal('ended') });

export const ChatAnalysis = Type.Object({
  name: Nullable(Type.String()),
  first_name: Nullable(Type.String()),
  last_name: Nullable(Type.String()),
  phone: Nullable(Type.String({ description: 'E.164' })),
  email: Nullable(Type.String()),
  case_type: Nullable(Type.String()),
  summary: Type.String(),
  urgency: Type.Union([
    Type.Literal('low'),
    Type.Literal('normal'),
    Type.Literal('high'),
    Type.Literal('urgent'),
  ]),
  answers: Type.Record(Type.String(), Type.String(), { description: 'Answer per intake question key' }),
  contact_collected: Type.Boolean(),
});

export const ChatResponse = Type.Object({
  chat_id: Type.String(),
  agent_id: Type.String(),
  firm: Type.String(),
  status: ChatStatus,
  messages: Type.Array(
    Type.Object({
      role: Type.Union([Type.Literal('agent'), Type.Literal('user')]),
      content: Type.String(),
      created_at: Timestamp,
    }),
  ),
  dynamic_variables: Type.Record(Type.String(), Type.String()),
  chat_analysis: Type.Optional(ChatAnalysis),
  effects: IntakeEffects(
    "The ended chat's effects, a call's (get-call): lead, crm (Clio), email (notification_emails), " +
      'team_chat (slack_webhook_url). pending: not happened yet (also while the chat is ongoing, while an ' +
      'attempt runs or is retried with backoff); done; skipped: not configured for the firm, nothing to act ' +
      'on (no phone or email: lead and crm), or the visitor wrote no message; failed: gave up after the last ' +
      'attempt, or refused for good by the outside system',
  ),
  created_at: Timestamp,
  ended_at: Nullable(Timestamp),
});
