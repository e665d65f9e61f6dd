// How long a chat may get (docs/widget.md#limits). Each message is at most 4,000 characters (the
// chat-completion schema); a chat takes at most MAX_CHAT_MESSAGES of them, so what one chat holds,
// and what its analysis at end-chat reads, stays bounded.
import { rateLimited, type AppError } from '../../platform/errors.js';
import type { ChatTurn } from '../../integrations/chat/engine.js';

/** Messages a person may send in one chat: the widget chats' limit (docs/widget.md#limits), for every chat. */
export const MAX_CHAT_MESSAGES = 100;

/**
 * Every 429 carries Retry-After (docs/errors.md#statuses), but this limit never lifts for the chat: an hour is
 * the longest a widget token lives, so by then the visitor has a new page and a new chat.
 */
const CHAT_FULL_RETRY_AFTER_SECONDS = 3600;

/** The messages the person has sent in a chat so far. */
export const sentMessages = (messages: readonly ChatTurn[]): number =>
  messages.reduce((n, m) => (m.role === 'user' ? n + 1 : n), 0);

/** 429 for a message beyond MAX_CHAT_MESSAGES (docs/widget.md#limits). */
export const chatFull = (): AppError =>
  rateLimited(
    `This chat has reached its limit of ${MAX_CHAT_MESSAGES} messages; end it and start a new chat to continue.`,
    CHAT_FULL_RETRY_AFTER_SECONDS,
  );
