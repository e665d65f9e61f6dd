import type { Static } from '@sinclair/typebox';
import type { ChatDoc } from '../../../core/domain/chats/chats.js';
import { chatIdleReason, type ChatEffectsDoc } from '../../../core/domain/chats/chat-effects.js';
import type { CallEffectState } from '../../../core/domain/calls/calls.js';
import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';
import type { ChatResponse, CreateChatResponse } from './schema.js';

/**
 * An effect's state for clients, as get-call shows a call's: `running` (an attempt under way, or
 * one whose outcome is not known yet) shows as `pending`. An ended chat the visitor wrote nothing
 * in has nothing to act on: its effects show `skipped`, before their records say so too.
 */
function effectState(
  chat: ChatDoc,
  records: ChatEffectsDoc['effects'],
  name: CallEffectName,
): CallEffectState {
  // Nothing to act on: skipped, also while the job records so (its mark first says `running`).
  if (chat.status === 'ended' && chatIdleReason(chat) !== null) return 'skipped';
  const state = records?.[name]?.state;
  if (state === undefined) return 'pending';
  return state === 'running' ? 'pending' : state;
}

/** The chat as get-chat shows it, with its effects' records (its effects document's; none yet: undefined). */
export function chatView(chat: ChatDoc, records?: ChatEffectsDoc['effects']): Static<typeof ChatResponse> {
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
    effects: Object.fromEntries(
      CALL_EFFECTS.map((name) => [name, effectState(chat, records, name)]),
    ) as Record<CallEffectName, CallEffectState>,
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
