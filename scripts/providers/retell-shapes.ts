// What `npm run providers:derive` turns into test/fakes/spec/retell.json: the shapes of Retell's
// API as retell-sdk's own .d.ts types declare them (the SDK is generated from Retell's OpenAPI
// document), for the requests our client sends (core/integrations/voice/retell.ts), Retell's
// answers to them, and the bodies Retell sends us: webhook events (docs.retellai.com
// features/webhook-overview: `{event, call}` for calls, `{event, chat}` for chats, transfers
// "plus transfer_destination and transfer_option") and custom-function requests (`{name, call,
// args}`, or the args alone with "Payload: args only", the SDK's `args_at_root`). Types only:
// nothing here runs.
import type {
  CallResponse,
  CallCreatePhoneCallParams,
  CallListParams,
  CallListResponse,
  PhoneCallResponse,
  WebCallResponse,
} from 'retell-sdk/resources/call';
import type { ChatResponse } from 'retell-sdk/resources/chat';
import type { VoiceListResponse } from 'retell-sdk/resources/voice';
import type { AgentResponse } from 'retell-sdk/resources/agent';
import type { ChatAgentResponse } from 'retell-sdk/resources/chat-agent';
import type { LlmResponse } from 'retell-sdk/resources/llm';

export type CreatePhoneCallBody = CallCreatePhoneCallParams;
export type CreatePhoneCallAnswer = PhoneCallResponse;
export type ListCallsBody = CallListParams;
export type ListCallsAnswer = CallListResponse;
/** GET /v2/get-call/{call_id}: the call as Retell has it now (the lost-call sweep asks). */
export type GetCallAnswer = CallResponse;
export type ListVoicesAnswer = VoiceListResponse;

/** Retell's error body (its API reference: `{status: "error", message}` for 400, 401, 402, 422, 429, 500). */
export interface RetellError {
  status: 'error';
  message: string;
}

/** Every event a voice agent's webhook can be sent (AgentResponse.webhook_events). */
export type CallEventName = NonNullable<AgentResponse['webhook_events']>[number];
/** Every event a chat agent's webhook can be sent (ChatAgentResponse.webhook_events). */
export type ChatEventName = NonNullable<ChatAgentResponse['webhook_events']>[number];
type TransferEventName = 'transfer_started' | 'transfer_bridged' | 'transfer_cancelled';

/** A call event other than a transfer's: the call object under `call`. */
export interface CallWebhook {
  event: Exclude<CallEventName, TransferEventName>;
  call: PhoneCallResponse | WebCallResponse;
}

/** A transfer event: the call plus where it was transferred and how, when Retell has them. */
export interface TransferWebhook {
  event: TransferEventName;
  call: PhoneCallResponse | WebCallResponse;
  transfer_destination?: LlmResponse.TransferCallTool['transfer_destination'];
  transfer_option?: LlmResponse.TransferCallTool['transfer_option'];
}

/** A chat event: the chat object under `chat`, no `call`. */
export interface ChatWebhook {
  event: ChatEventName;
  chat: ChatResponse;
}

/** A custom function's request with the default payload: the function's name, the call, its args. */
export interface CustomFunctionRequest {
  name: string;
  call: PhoneCallResponse | WebCallResponse;
  args: { [key: string]: unknown };
}

/** A custom function's request with "Payload: args only" (`args_at_root`): the args, nothing else. */
export type CustomFunctionArgsOnly = { [key: string]: unknown };
