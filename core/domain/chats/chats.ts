// Chat sessions: create-chat, chat-completion, end-chat, get-chat.
//
// Concurrency. Every change to a chat (an exchange of a user message and the agent's reply, or
// the end) gets the next version number, and is first written to the chat's exchange log as a
// document whose _id is `<chat_id>:<version>`. Inserting that document is the compare-and-set:
// of two requests that both read version n, exactly one inserts `<chat_id>:<n+1>`; the other
// gets a duplicate-key error, reloads the chat and computes its reply again on the longer
// history (up to MAX_ATTEMPTS times, then 409 chat_busy). Only then is the chat document
// updated (version, messages, status), and only then does the request answer 200.
//
// Why not `updateOne({_id, version: n}, ...)`: FerretDB 1.24 (tests and local runs) applies an
// update as a read followed by a write, not atomically; 30 concurrent version-guarded updates
// of one document kept 15 of them. A unique _id is enforced atomically on both FerretDB and
// MongoDB. The log is the source of truth and the chat document its materialised view: a
// reader that finds log entries beyond the document's version applies them first (catchUp),
// which also repairs a chat whose writer died between the two writes.
//
// Length. A chat takes at most MAX_CHAT_MESSAGES messages from the person (chat-limits.ts), and a
// turn reads only its new message: the engine's intake progress is stored with each exchange and
// handed back on the next turn, instead of the history being replayed.
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import { AppError, conflict, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Services } from '../../wiring/services.js';
import type {
  ChatAgentProfile,
  ChatEngine,
  ChatTurn,
  IntakeProgress,
} from '../../integrations/chat/engine.js';
import { intakeAgent } from '../intake/intake-agent.js';
import type { AgentDoc } from '../agents/agents.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import { analyseIntake, type IntakeAnalysis } from '../intake/analysis.js';
import { withBookingStep } from './chat-booking.js';
import { startChatEffects } from './chat-effects.js';
import type { ChatVisitor } from './widget-booking-limits.js';
import { MAX_CHAT_MESSAGES, chatFull, sentMessages } from './chat-limits.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { listChatOptOut } from '../compliance/opt-out-listing.js';
import { findPhone } from '../contact-points/phones.js';
import { own } from '../../platform/own.js';

export type ChatStatus = 'ongoing' | 'ended';

interface ChatMessage extends ChatTurn {
  created_at: Date;
}

/** The engine that answers: the LLM when one is configured, else the built-in intake agent. */
const engineOf = (services: Services): ChatEngine => services.llm ?? intakeAgent;

/** What end-chat stores: the shared intake analysis (contact_collected says whether a lead is due). */
export type ChatAnalysis = IntakeAnalysis;

export interface ChatDoc {
  _id: string;
  firm: string;
  agent_id: string;
  /** The engine that greeted; replies come from the engine configured when each message arrives. */
  engine: ChatEngine['name'];
  /** The agent as it was at creation: a chat keeps its questions when the agent changes or goes. */
  agent: ChatAgentProfile;
  dynamic_variables: Record<string, string>;
  status: ChatStatus;
  /** Number of changes applied (exchanges and the end); the log holds one document per version. */
  version: number;
  messages: ChatMessage[];
  /**
   * The engine's progress after the last exchange, handed to it with the next message. Null (or,
   * on chats stored before it was kept, absent) when the last exchange kept none: the engine then
   * rebuilds it from the messages.
   */
  intake_progress?: IntakeProgress | null;
  chat_analysis: ChatAnalysis | null;
  /** Set when a widget token opened the chat: only that token (and the firm's own tokens) may use it. */
  widget_subject?: string;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

interface ChatTurnDoc {
  /** `<chat_id>:<version>`: unique, so only one change can take each version. */
  _id: string;
  chat_id: string;
  firm: string;
  version: number;
  kind: 'exchange' | 'end';
  append: ChatMessage[];
  /** An exchange's progress after its message (absent in turns logged before it was kept). */
  progress?: IntakeProgress | null;
  end: { ended_at: Date; chat_analysis: ChatAnalysis } | null;
  created_at: Date;
}

type ChatChange = Pick<ChatTurnDoc, 'kind' | 'append' | 'progress' | 'end'>;

/** How often a request recomputes its reply after losing a version to a concurrent one. */
const MAX_ATTEMPTS = 10;

const chats = (db: Db) => collection<ChatDoc>(db, COLLECTIONS.chats);
const turns = (db: Db) => collection<ChatTurnDoc>(db, COLLECTIONS.chatTurns);
const turnId = (chatId: string, version: number) => `${chatId}:${version}`;

const chatNotActive = (): AppError =>
  conflict('chat_not_active', 'This chat has ended; create a new chat to continue the conversation.');

const chatBusy = (): AppError =>
  conflict('chat_busy', 'Too many messages arrived for this chat at the same time; send the message again.');

export async function createChat(
  services: Services,
  agent: Frozen<AgentDoc>,
  dynamicVariables: Record<string, string>,
  /** The widget token that opens it: only that token may use the chat (besides the firm's own). */
  widgetSubject?: string,
): Promise<ChatDoc> {
  const profile: ChatAgentProfile = {
    agent_name: agent.agent_name,
    language: agent.language,
    prompt: agent.prompt,
    begin_message: agent.begin_message,
    intake_questions: agent.intake_questions.map((q) => ({ key: q.key, question: q.question })),
  };
  const greeting = engineOf(services).greeting({ agent: profile, dynamicVariables });
  const now = new Date();
  const chat: ChatDoc = {
    _id: newId('chat'),
    firm: agent.firm,
    agent_id: agent._id,
    engine: engineOf(services).name,
    agent: profile,
    dynamic_variables: dynamicVariables,
    status: 'ongoing',
    version: 0,
    messages: greeting === null ? [] : [{ role: 'agent', content: greeting, created_at: now }],
    intake_progress: null,
    chat_analysis: null,
    ...(widgetSubject === undefined ? {} : { widget_subject: widgetSubject }),
    created_at: now,
    updated_at: now,
    ended_at: null,
  };
  await chats(services.mongo.db).insertOne(chat);
  return chat;
}

/**
 * The chat by id as stored, whoever owns it; null when there is none. The route checks who may
 * use it (a widget token only the chats it opened itself), then brings it up to date with
 * `currentChat` or changes it.
 */
export function findChat(db: Db, chatId: string): Promise<ChatDoc | null> {
  return chats(db).findOne({ _id: chatId });
}

/** A chat's end as its log records it: the chat, its firm, when the end was logged. */
export type ChatEnd = Pick<ChatDoc, '_id' | 'firm'> & { ended_at: Date };

/**
 * The firm's chats that ended in `[from, to)`, by the end's entry in the log, oldest first (one
 * streaming cursor): a chat whose writer stopped between logging its end and writing the chat
 * document is among them, though its document still says `ongoing`.
 */
export async function* chatsEndedBetween(
  db: Db,
  firm: string,
  from: Date,
  to: Date,
): AsyncGenerator<ChatEnd> {
  const cursor = turns(db)
    .find(
      { firm, kind: 'end', created_at: { $gte: from, $lt: to } },
      { projection: { _id: 0, chat_id: 1, firm: 1, created_at: 1 } },
    )
    .sort({ created_at: 1, _id: 1 });
  for await (const end of cursor) yield { _id: end.chat_id, firm: end.firm, ended_at: end.created_at };
}

/** The stored chat up to date with its log (a writer may have stopped between the two). */
export const currentChat = (db: Db, stored: ChatDoc): Promise<ChatDoc> => catchUp(db, stored);

async function rereadChat(db: Db, chatId: string): Promise<ChatDoc> {
  const stored = await findChat(db, chatId);
  if (stored === null) throw notFound('chat');
  return catchUp(db, stored);
}

function applyTurn(chat: ChatDoc, turn: ChatTurnDoc): ChatDoc {
  return {
    ...chat,
    version: turn.version,
    messages: [...chat.messages, ...turn.append],
    // An end keeps the last exchange's progress; an exchange replaces it (null when it kept none).
    ...(turn.kind === 'exchange' ? { intake_progress: turn.progress ?? null } : {}),
    updated_at: turn.created_at,
    ...(turn.end === null
      ? {}
      : { status: 'ended' as const, ended_at: turn.end.ended_at, chat_analysis: turn.end.chat_analysis }),
  };
}

/** Writes the materialised state of `next` over the document that was at `next.version - 1`. */
async function materialise(db: Db, next: ChatDoc): Promise<void> {
  await chats(db).updateOne(
    { _id: next._id, version: next.version - 1 },
    {
      $set: {
        version: next.version,
        messages: next.messages,
        intake_progress: next.intake_progress ?? null,
        status: next.status,
        chat_analysis: next.chat_analysis,
        updated_at: next.updated_at,
        ended_at: next.ended_at,
      },
    },
  );
}

/** Applies log entries the document has not caught up with (a writer that stopped half-way). */
async function catchUp(db: Db, chat: ChatDoc): Promise<ChatDoc> {
  let current = chat;
  for (;;) {
    const turn = await turns(db).findOne({ _id: turnId(current._id, current.version + 1) });
    if (turn === null) return current;
    current = applyTurn(current, turn);
    await materialise(db, current);
  }
}

/** Claims the next version for a change; null when another change took it first. */
async function commitTurn(db: Db, chat: ChatDoc, change: ChatChange): Promise<ChatDoc | null> {
  const version = chat.version + 1;
  const turn: ChatTurnDoc = {
    _id: turnId(chat._id, version),
    chat_id: chat._id,
    firm: chat.firm,
    version,
    ...change,
    created_at: new Date(),
  };
  if (!(await claim(turns(db), turn))) return null;
  const next = applyTurn(chat, turn);
  await materialise(db, next);
  return next;
}

const pause = (attempt: number) => sleep(Math.min(100, 5 * attempt) + Math.random() * 20);

/**
 * Runs `change` against the current chat (the route checked who may use it) until it commits:
 * 409 chat_not_active once it has ended, 409 chat_busy after MAX_ATTEMPTS lost races.
 */
async function changeChat<R>(
  db: Db,
  stored: ChatDoc,
  change: (chat: ChatDoc) => Promise<{ turn: ChatChange; result: R }>,
): Promise<{ chat: ChatDoc; result: R }> {
  for (let attempt = 1; ; attempt++) {
    const current = attempt === 1 ? await catchUp(db, stored) : await rereadChat(db, stored._id);
    if (current.status !== 'ongoing') throw chatNotActive();
    const { turn, result } = await change(current);
    const committed = await commitTurn(db, current, turn);
    if (committed !== null) return { chat: committed, result };
    if (attempt >= MAX_ATTEMPTS) throw chatBusy();
    await pause(attempt);
  }
}

/**
 * Throws what sendChatMessage would answer a chat as read that takes no more messages: 409
 * chat_not_active once ended, 429 once full. A chat only ends and grows, so a chat read earlier
 * that says so is so now; one that does not is checked again by sendChatMessage. For a widget
 * visitor this comes before the message is counted against the visitor's and the firm's limits
 * (docs/widget.md#limits): a message the chat refuses reaches no engine and is not counted.
 */
export function assertChatTakesMessage(chat: ChatDoc): void {
  if (chat.status !== 'ongoing') throw chatNotActive();
  if (sentMessages(chat.messages) >= MAX_CHAT_MESSAGES) throw chatFull();
}

/**
 * chat-completion: the agent's reply to `message`, stored with it on the chat; 429 once the
 * person has sent MAX_CHAT_MESSAGES.
 */
export async function sendChatMessage(
  services: Services,
  chat: ChatDoc,
  message: string,
  /** The widget visitor sending it (their limits on bookings); undefined for a firm's own token. */
  visitor?: ChatVisitor,
): Promise<{ chat: ChatDoc; reply: string }> {
  const changed = await changeChat(services.mongo.db, chat, async (current) => {
    if (sentMessages(current.messages) >= MAX_CHAT_MESSAGES) throw chatFull();
    const receivedAt = new Date();
    const engine = engineOf(services);
    const answered = await engine.reply(
      {
        agent: current.agent,
        dynamicVariables: current.dynamic_variables,
        history: current.messages.map((m) => ({ role: m.role, content: m.content })),
        progress: current.intake_progress ?? null,
      },
      message,
    );
    // The built-in agent's consultation offer and booking (chat-booking.ts); an LLM has its own tools.
    const reply =
      engine.name === 'intake'
        ? await withBookingStep(services, current, message, answered, visitor)
        : answered;
    return {
      turn: {
        kind: 'exchange',
        append: [
          { role: 'user', content: message, created_at: receivedAt },
          { role: 'agent', content: reply.message, created_at: new Date() },
        ],
        progress: reply.progress,
        end: null,
      },
      result: reply.message,
    };
  });
  // A message that gives a number looks again over what the person wrote before: an opt-out
  // written before the number was known is listed now, not only if the chat is ever ended.
  const scanned =
    findPhone(message) === null
      ? [message]
      : changed.chat.messages.filter((m) => m.role === 'user').map((m) => m.content);
  await listOptOut(services, changed.chat, scanned, null);
  return { chat: changed.chat, reply: changed.result };
}

/**
 * An opt-out the person wrote puts the chat's phone number on the firm's do-not-call list
 * (docs/compliance.md#opt-outs): the number the intake collected (`phone`, or the chat so far
 * when null) or the one the chat was opened with (dynamic variable phone / phone_number). A chat
 * with no number records nothing yet; the message that gives one, and end-chat, look again over
 * every message, so an opt-out written before the number was given is listed then.
 */
async function listOptOut(
  services: Services,
  chat: ChatDoc,
  messages: readonly string[],
  collected: string | null,
): Promise<void> {
  if (messages.length === 0) return;
  const given = [own(chat.dynamic_variables, 'phone'), own(chat.dynamic_variables, 'phone_number')].find(
    (v): v is string => typeof v === 'string' && v.trim() !== '',
  );
  const phone = (): string | null =>
    collected ?? analyseChat(chat).phone ?? (given === undefined ? null : findPhone(given));
  // The analysis runs only for a chat whose messages hold an opt-out (listChatOptOut asks for it then).
  await listChatOptOut(services, chat, messages, phone);
}

/**
 * An opt-out among every message the person wrote in an ended chat, listed with the number its
 * analysis collected (listOptOut): by end-chat, and again by the chat's effects job, so that one
 * an end-chat that stopped before listing it left undone is listed when the client retries, or
 * when the lost-chats sweep adds the job (the listing's claim makes each once).
 */
export function listEndedChatOptOut(services: Services, chat: ChatDoc): Promise<void> {
  return listOptOut(
    services,
    chat,
    chat.messages.filter((m) => m.role === 'user').map((m) => m.content),
    chat.chat_analysis?.phone ?? null,
  );
}

/** The intake analysis of a chat: the same function the call pipeline uses. */
export function analyseChat(chat: Pick<ChatDoc, 'agent' | 'messages' | 'dynamic_variables'>): ChatAnalysis {
  return analyseIntake({
    intakeQuestions: chat.agent.intake_questions,
    messages: chat.messages,
    dynamicVariables: chat.dynamic_variables,
  });
}

/**
 * end-chat: stores the analysis and closes the chat, then starts the chat's effects, as a call's
 * (chat-effects.ts): the job that runs them is added, and the lead — one per chat, made when the
 * person wrote and a phone or an email was collected — is made before answering, so a 200 means
 * the lead exists. A chat nobody wrote in is no enquiry, whatever its dynamic variables say
 * (docs/widget.md#limits): its effects are all skipped. A request that failed between the writes
 * is repaired by the client's retry: end-chat on an ended chat still answers 409
 * chat_not_active, but first makes sure the job is added and the lead exists. Without a retry,
 * the lost-chats sweep finds the end in the log (chatsEndedBetween) and adds the job, which
 * brings the chat up to date and makes the lead.
 */
export async function endChat(
  services: Services,
  chat: ChatDoc,
): Promise<{ chat: ChatDoc; analysis: ChatAnalysis }> {
  const db = services.mongo.db;
  let ended: { chat: ChatDoc; result: ChatAnalysis };
  try {
    ended = await changeChat(db, chat, async (current) => {
      const analysis = analyseChat(current);
      return {
        turn: { kind: 'end', append: [], end: { ended_at: new Date(), chat_analysis: analysis } },
        result: analysis,
      };
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'chat_not_active') {
      // Ended by an earlier request that may have died before its effects' job, its lead or its
      // opt-out listing: each made good here (each once, whoever makes it), then the 409.
      const current = await rereadChat(db, chat._id);
      await listEndedChatOptOut(services, current);
      await startChatEffects(services, current, true);
    }
    throw err;
  }
  // The opt-out first: a do-not-call listing does not wait on the effects.
  await listEndedChatOptOut(services, ended.chat);
  await startChatEffects(services, ended.chat, false);
  return { chat: ended.chat, analysis: ended.result };
}
