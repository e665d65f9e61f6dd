import type { Static } from '@sinclair/typebox';
import type { ChatDoc } from '../../../core/domain/chats/chats.js';
import type { ChatResponse, CreateChatResponse } from './schema.js';

export function chatView(chat: ChatDoc): Static<typeof ChatResponse> {
  return {
    chat_id: chat._id,
    agent_id: chat.agent_id,
    firm: chat.firm,
    status: chat.status,
    messages: chat.messages.map((m) => ({
      role: m.role,
      content: m.content,
      created_at: m.created_at.toISOString(),
    })),
    dynamic_variables: chat.dynamic_variables,
    ...(chat.chat_analysis === null ? {} : { chat_analysis: chat.chat_analysis }),
    created_at: chat.created_at.toISOString(),
    ended_at: chat.ended_at === null ? null : chat.ended_at.toISOString(),
  };
}

/** A chat just opened: its ids and the agent's first message (when the agent greets). */
export function openedChatView(chat: ChatDoc): Static<typeof CreateChatResponse> {
  const greeting = chat.messages[0]?.content;
  return {
    chat_id: chat._id,
    agent_id: chat.agent_id,
    status: 'ongoing',
    ...(greeting === undefined ? {} : { message: greeting }),
  };
}
