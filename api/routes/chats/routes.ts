import { requireFirm, requireRecord } from '../../../core/domain/access/access.js';
import type { Principal } from '../../../core/domain/access/principal.js';
import { forbidden, quote } from '../../../core/platform/errors.js';
import { getFirmAgent } from '../../../core/domain/agents/agents.js';
import {
  assertChatTakesMessage,
  createChat,
  currentChat,
  endChat,
  findChat,
  sendChatMessage,
  type ChatDoc,
} from '../../../core/domain/chats/chats.js';
import type { Services } from '../../../core/wiring/services.js';
import { chatEffectsCollection } from '../../../core/domain/chats/chat-effects.js';
import { defineRoute } from '../../route.js';
import { chatView, openedChatView } from './present.js';
import {
  ChatCompletionBody,
  ChatCompletionResponse,
  ChatParams,
  ChatResponse,
  CreateChatBody,
  CreateChatResponse,
  EndChatBody,
  EndChatResponse,
} from './schema.js';
import { stringifyVariables } from '../../../core/domain/agents/dynamic-variables.js';
import { countWidgetMessage } from '../../../core/domain/widget/widget-limits.js';

const tag = 'Voice & Chat';

// The chat routes are the only ones a widget token may use (docs/authentication.md#widget-tokens): each
// opts in with `acceptWidget`. A widget token acts for its own firm's agents, and only on the chats it
// opened.

/** The chat as stored, if the principal may use it (a widget token: only the chats it opened). */
const requireChat = async (services: Services, principal: Principal, chatId: string): Promise<ChatDoc> =>
  requireRecord(principal, await findChat(services.mongo.db, chatId), 'chat');

export const chatRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/create-chat',
    operationId: 'createChat',
    summary:
      "Open a chat with an agent of the firm; returns the agent's first message (a widget token's dynamicVariables are ignored)",
    tag,
    auth: { kind: 'token', acceptWidget: true },
    body: CreateChatBody,
    response: CreateChatResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      const db = services.mongo.db;
      const firm = await requireFirm(db, principal, body.firmSlug);
      const widget = principal.kind === 'widget';
      // A widget key's token chats with the one agent its session named.
      if (widget && principal.binding !== undefined && principal.binding.agent !== body.agentId) {
        throw forbidden(`This widget token is for the agent ${quote(principal.binding.agent)} only.`);
      }
      const agent = await getFirmAgent(db, firm._id, body.agentId);
      // Dynamic variables are what the firm knows about the person; a page visitor's would be
      // theirs to invent (a forged phone would make a lead), so a widget token's are ignored
      // (docs/widget.md#limits).
      const chat = await createChat(
        services,
        agent,
        widget ? {} : stringifyVariables(body.dynamicVariables),
        widget ? principal.subject : undefined,
      );
      return openedChatView(chat);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v2/chat-completion',
    operationId: 'chatCompletion',
    summary:
      "Send a message in an active chat and get the agent's reply (409 chat_not_active once ended; 429 after the chat's 100 messages, or past the firm's widget_daily_message_cap for a widget token)",
    tag,
    auth: { kind: 'token', acceptWidget: true },
    body: ChatCompletionBody,
    response: ChatCompletionResponse,
    errors: [404, 409, 502],
    handler: async ({ services, principal, body, koa }) => {
      const chat = await requireChat(services, principal, body.chatId);
      // The firm's widget visitors share a daily cap, each within its own share (docs/widget.md#limits);
      // a message the chat refuses (ended, full) is answered before it is counted.
      if (principal.kind === 'widget') {
        assertChatTakesMessage(chat);
        await countWidgetMessage(services, principal, koa.ip);
      }
      // A widget visitor books within the widget's limits (docs/widget.md#bookings).
      const visitor =
        principal.kind === 'widget'
          ? {
              address: koa.ip,
              ...(principal.binding === undefined
                ? {}
                : { key: principal.binding.key, altcha: principal.binding.altcha }),
            }
          : undefined;
      const { reply } = await sendChatMessage(services, chat, body.message, visitor);
      return { message: reply };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v2/end-chat',
    operationId: 'endChat',
    summary:
      'End a chat: store its intake analysis and run its effects as a call’s (the lead before answering; CRM, email and Slack by a job)',
    tag,
    auth: { kind: 'token', acceptWidget: true },
    body: EndChatBody,
    response: EndChatResponse,
    errors: [404, 409],
    handler: async ({ services, principal, body }) => {
      const { chat } = await endChat(services, await requireChat(services, principal, body.chatId));
      return { chat_id: chat._id, status: 'ended' as const };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v2/get-chat/{chat_id}',
    operationId: 'getChat',
    summary: 'Read a chat with its messages (and its analysis once ended) and its effects',
    tag,
    auth: { kind: 'token', acceptWidget: true },
    params: ChatParams,
    response: ChatResponse,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const db = services.mongo.db;
      const chat = await currentChat(db, await requireChat(services, principal, params.chat_id));
      // Its effects' records (one point read): only an ended chat has any.
      const records =
        chat.status === 'ended'
          ? await chatEffectsCollection(db).findOne({ _id: chat._id }, { projection: { effects: 1 } })
          : null;
      return chatView(chat, records?.effects);
    },
  }),
];
