// The LLM chat engine: OpenAI's chat completions through the official SDK. The system prompt is
// the agent's prompt, its intake questions and the chat's dynamic variables; the stored
// messages are the conversation. Used when OPENAI_API_KEY is set (OPENAI_BASE_URL points it at
// a compatible server, e.g. the local fake in tests).
import OpenAI, { APIConnectionError, APIError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { AppError, badGateway, serviceUnavailable } from '../../platform/errors.js';
import {
  fillVariables,
  type ChatEngine,
  type ChatEngineInput,
  type ChatOpening,
  type ChatReply,
} from './engine.js';

interface OpenAiChatOptions {
  apiKey: string;
  baseUrl: string | undefined;
  model: string;
  /** Per attempt; one retry on 429/5xx/network failures comes on top. */
  timeoutMs?: number;
}

/** The system prompt for an agent: its own prompt, then the intake it has to run. */
function buildSystemPrompt(input: ChatOpening): string {
  const { agent, dynamicVariables } = input;
  const own = fillVariables(agent.prompt, dynamicVariables).trim();
  const lines = [
    own !== '' ? own : `You are ${agent.agent_name}, a friendly intake assistant for a law firm.`,
    '',
  ];
  if (agent.intake_questions.length > 0) {
    lines.push(
      'Run a client intake in this chat. Ask these questions one at a time, in this order, and skip any the person has already answered:',
      ...agent.intake_questions.map((q, i) => `${i + 1}. ${q.question} (${q.key})`),
      'When every question is answered, summarise what you collected and say that the firm will contact them.',
    );
  }
  lines.push(
    'Keep replies short and friendly. Do not give legal advice.',
    `Write in the language of the tag ${agent.language} unless the person writes in another language.`,
  );
  const known = Object.entries(dynamicVariables);
  if (known.length > 0) {
    lines.push('', 'Known details about this person:', ...known.map(([k, v]) => `- ${k}: ${v}`));
  }
  return lines.join('\n');
}

function buildMessages(input: ChatEngineInput, message: string): ChatCompletionMessageParam[] {
  return [
    { role: 'system', content: buildSystemPrompt(input) },
    ...input.history.map((m): ChatCompletionMessageParam =>
      m.role === 'agent' ? { role: 'assistant', content: m.content } : { role: 'user', content: m.content },
    ),
    { role: 'user', content: message },
  ];
}

function retryAfterSeconds(err: APIError): number {
  const value = err.headers?.get('retry-after')?.trim();
  return value !== undefined && /^\d{1,4}$/.test(value) ? Number(value) : 5;
}

/**
 * Provider failures as our errors. Transient ones (429, 5xx, timeouts, connection failures; the
 * SDK has retried once already) → 503 unavailable with Retry-After: the client may send the
 * message again. Anything else (a rejected key, a bad request, an empty answer) → 502
 * chat_engine_error: retrying will not help until the configuration is fixed.
 */
function chatEngineError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const transient =
    err instanceof APIConnectionError ||
    (err instanceof APIError &&
      err.status !== undefined &&
      (err.status === 408 || err.status === 429 || err.status >= 500));
  let mapped: AppError;
  if (transient) {
    const retryAfter =
      err instanceof APIError && !(err instanceof APIConnectionError) ? retryAfterSeconds(err) : 5;
    mapped = serviceUnavailable(
      'The chat model is temporarily unavailable; send the message again shortly.',
      retryAfter,
    );
  } else {
    const status = err instanceof APIError && err.status !== undefined ? ` (status ${err.status})` : '';
    mapped = badGateway(
      'chat_engine_error',
      `The chat model rejected the request${status}; the service's OpenAI configuration needs attention.`,
    );
  }
  mapped.cause = err;
  return mapped;
}

export class OpenAiChatEngine implements ChatEngine {
  readonly name = 'openai' as const;
  private readonly client: OpenAI;

  constructor(private readonly options: OpenAiChatOptions) {
    this.client = new OpenAI({
      apiKey: options.apiKey,
      ...(options.baseUrl === undefined ? {} : { baseURL: options.baseUrl }),
      // One retry on 429/5xx/network errors (the SDK honours Retry-After); then we give up.
      maxRetries: 1,
      timeout: options.timeoutMs ?? 30_000,
    });
  }

  /** The agent's begin message, without a model call: opening a chat costs nothing. */
  greeting({ agent, dynamicVariables }: ChatOpening): string | null {
    const text = fillVariables(agent.begin_message, dynamicVariables).trim();
    return text === '' ? null : text;
  }

  /** The model reads the whole conversation each turn, so it keeps no progress of its own. */
  async reply(input: ChatEngineInput, message: string): Promise<ChatReply> {
    let content: string | null | undefined;
    try {
      const completion = await this.client.chat.completions.create({
        model: this.options.model,
        messages: buildMessages(input, message),
      });
      content = completion.choices[0]?.message?.content;
    } catch (err) {
      throw chatEngineError(err);
    }
    const text = content?.trim() ?? '';
    if (text === '') {
      throw badGateway('chat_engine_error', 'The chat model returned an empty reply; try again.');
    }
    return { message: text, progress: null };
  }
}
