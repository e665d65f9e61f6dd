// The chat engine behind chat-completion: the built-in intake agent (offline, deterministic)
// or an LLM through the OpenAI API, chosen by configuration (core/wiring/services.ts).

export type ChatRole = 'agent' | 'user';

/** One turn of a conversation (a chat message, a transcript line). */
export interface ChatTurn {
  role: ChatRole;
  content: string;
}

/** The agent as it was when the chat was created (a chat keeps talking like that agent). */
export interface ChatAgentProfile {
  agent_name: string;
  language: string;
  prompt: string;
  begin_message: string;
  intake_questions: Array<{ key: string; question: string }>;
}

/**
 * How far an engine got through the intake: the answer per question key so far (a question with
 * one is answered). Kept with the chat, so that a turn reads only its new message instead of
 * replaying the history: a turn costs as much at message 100 as at message 1.
 */
export interface IntakeProgress {
  answers: Array<{ key: string; value: string }>;
  /** The appointment offered after the questions (core/domain/chats/chat-booking.ts); absent: none. */
  booking?: ChatBookingProgress;
}

/** Free slots offered to the person, then the one booked. */
export interface ChatBookingProgress {
  time_zone: string;
  offered: Array<{ start: string; spoken: string }>;
  booked: { booking_uid: string; start: string; spoken: string } | null;
}

export interface ChatEngineInput {
  agent: ChatAgentProfile;
  /** The chat's dynamic variables (strings), for {{name}} placeholders and the LLM's context. */
  dynamicVariables: Readonly<Record<string, string>>;
  /** The chat's messages so far, oldest first (the greeting included), without the new message. */
  history: readonly ChatTurn[];
  /**
   * The progress the engine returned with the last reply; null when none was kept (a chat stored
   * before progress was, or a turn another engine answered): the engine derives it from `history`.
   */
  progress: IntakeProgress | null;
}

/** What opening a chat needs: no history, no progress yet. */
export type ChatOpening = Pick<ChatEngineInput, 'agent' | 'dynamicVariables'>;

export interface ChatReply {
  message: string;
  /** The progress to keep for the next turn; null from an engine that reads the history instead. */
  progress: IntakeProgress | null;
}

export interface ChatEngine {
  readonly name: 'intake' | 'openai';
  /** The agent's first message when a chat opens, or null to let the user speak first. */
  greeting(input: ChatOpening): string | null;
  /**
   * The agent's reply to `message`. Must not store anything: the caller stores the exchange and
   * may call this again with a longer history when another message got in first.
   * Failures are AppErrors (503 unavailable, 502 chat_engine_error).
   */
  reply(input: ChatEngineInput, message: string): Promise<ChatReply>;
}

/** Replaces {{name}} placeholders with dynamic variables (Retell's convention); unknown ones stay. */
export function fillVariables(text: string, variables: Readonly<Record<string, string>>): string {
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, key: string) =>
    Object.prototype.hasOwnProperty.call(variables, key) ? variables[key]! : whole,
  );
}
