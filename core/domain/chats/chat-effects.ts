import type { Collection, Db } from 'mongodb';
import type { CallEffectName } from '../../../jobs/call-analysis.js';
import { enqueue, enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import type {
  Attempt,
  EffectRecord,
  EffectSubject,
  EffectSubjectDoc,
} from '../../platform/db/effect-records.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { effectLease } from '../calls/call-lock.js';
import {
  runIntakeEffect,
  runIntakeEffects,
  type EffectInJob,
  type Intake,
} from '../call-analysis/intake-effects.js';
import { sentMessages } from './chat-limits.js';
import { analyseChat, currentChat, findChat, listEndedChatOptOut, type ChatDoc } from './chats.js';

// The effects of an ended chat (docs/webhooks.md#chats): the same four as an analysed call's —
// lead, crm, email, team_chat — defined once (core/domain/call-analysis/intake-effects.ts) and run
// the same way: end-chat runs the lead before it answers (a 200 means the lead exists) and adds
// the chat-effects job (job id = firm + chat), which runs the four together (the lead is found
// done); a failing one is handed to a chat-effect job of its own (job id = firm + chat + effect),
// retried with backoff. The records live in the chat's effects document (chat_effects, `_id` = the
// chat's), written under the chat's lock: no effect rewrites the chat and its messages.

/** An ended chat's effect records, at the paths a call's have (`effects.<name>`, `crm_sync.*`). */
export interface ChatEffectsDoc {
  _id: string;
  effects?: Partial<Record<CallEffectName, EffectRecord>>;
  crm_sync?: { contact?: EffectRecord; matter?: EffectRecord };
}

export const chatEffectsCollection = (db: Db) => collection<ChatEffectsDoc>(db, COLLECTIONS.chatEffects);

/** Why the effects act on nothing: the visitor wrote no message (no conversation took place). */
export const NO_CHAT_CONVERSATION = 'The visitor wrote no message in the chat: no conversation took place.';

/** Why an ended chat runs no effect, or null when they run (the visitor wrote). */
export const chatIdleReason = (chat: Pick<ChatDoc, 'messages'>): string | null =>
  sentMessages(chat.messages) === 0 ? NO_CHAT_CONVERSATION : null;

/**
 * A chat as the subject of its effects: the records in its effects document, written under the
 * chat's lock (the recorder keeps the lock's memo: it is the lock's only holder); a running effect
 * holds a lease, so another attempt waits for it.
 */
function chatEffectsSubject(services: Services, chat: Pick<ChatDoc, '_id' | 'firm'>): EffectSubject {
  return {
    collection: services.mongo.db.collection<EffectSubjectDoc>(COLLECTIONS.chats),
    id: chat._id,
    exclusive: (write) =>
      withRecordLock(services.redis, redisKeys(services.config).chatLock(chat.firm, chat._id), write, {
        ttlMs: services.config.callLockMs,
        keepsMemo: true,
      }),
    lease: effectLease(services),
    records: chatEffectsCollection(services.mongo.db) as unknown as Collection<EffectSubjectDoc>,
  };
}

/** An ended chat as the subject of the intake effects. */
export function chatIntake(services: Services, chat: ChatDoc): Intake {
  return {
    kind: 'chat',
    id: chat._id,
    firm: chat.firm,
    records: chatEffectsSubject(services, chat),
    idle: chatIdleReason(chat),
    // As end-chat stored it; a chat ended without one (not by end-chat) is analysed now, by the
    // same pure analysis.
    data: chat.chat_analysis ?? analyseChat(chat),
    // The person wrote to the firm: an inquiry, consent to be called about it.
    lead: { source: 'chat', id: chat._id, firm: chat.firm, inquiryAt: chat.created_at },
    notice: {
      kind: 'chat',
      chat: {
        chat_id: chat._id,
        agent_name: chat.agent.agent_name,
        ended_at: chat.ended_at,
        visitor_messages: sentMessages(chat.messages),
      },
    },
    retry: (effect, options) =>
      enqueueRun(services.queues, JOBS.chatEffect, { firm: chat.firm, chatId: chat._id, effect }, options),
  };
}

/**
 * What end-chat does of the effects of the chat it ended, before it answers: adds the chat-effects
 * job (`again`, for an end-chat repeated on an ended chat: added again even if a finished job of
 * that id is still kept, which then finds every effect settled), then runs the lead through its
 * effect, so a 200 means the lead exists (the job finds it done). A request that fails on the way
 * is made good by the client's retry, which answers 409 chat_not_active after doing this again.
 */
export async function startChatEffects(services: Services, chat: ChatDoc, again: boolean): Promise<void> {
  await (again ? enqueueRun : enqueue)(services.queues, JOBS.chatEffects, {
    firm: chat.firm,
    chatId: chat._id,
  });
  await runIntakeEffect(services, chatIntake(services, chat), 'lead', { lastAttempt: false });
}

/**
 * The ended chat of a job, up to date with its log; null when there is none (or another firm's),
 * or it has not ended (a job is only added once it has: nothing is recorded of one that has not).
 */
async function endedChat(services: Services, job: { firm: string; chatId: string }): Promise<ChatDoc | null> {
  const stored = await findChat(services.mongo.db, job.chatId);
  if (stored === null || stored.firm !== job.firm) return null;
  const chat = await currentChat(services.mongo.db, stored);
  return chat.status === 'ended' ? chat : null;
}

/**
 * The chat-effects job: the person's opt-out listed (again: end-chat listed it unless it stopped
 * first, and the listing is made once), then every effect of the ended chat, together
 * (runIntakeEffects).
 */
export async function runChatEffects(
  services: Services,
  job: { firm: string; chatId: string },
  attempt: Attempt,
): Promise<{ outcome: 'missing' } | { outcome: 'ran'; effects: Record<CallEffectName, EffectInJob> }> {
  const chat = await endedChat(services, job);
  if (chat === null) return { outcome: 'missing' };
  await listEndedChatOptOut(services, chat);
  return { outcome: 'ran', effects: await runIntakeEffects(services, chatIntake(services, chat), attempt) };
}

/** The chat-effect job: one effect of an ended chat, retried on its own; its state after this attempt. */
export async function runChatEffect(
  services: Services,
  job: { firm: string; chatId: string; effect: CallEffectName },
  attempt: Attempt,
): Promise<'missing' | EffectRecord['state']> {
  const chat = await endedChat(services, job);
  if (chat === null) return 'missing';
  return (await runIntakeEffect(services, chatIntake(services, chat), job.effect, attempt)).state;
}
