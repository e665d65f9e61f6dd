import { JOBS } from '../../../jobs/table.js';
import { CALL_EFFECTS } from '../../../jobs/call-analysis.js';
import { enqueueRun } from '../../../jobs/define.js';
import { COLLECTIONS } from '../../platform/db/collections.js';
import type { Services } from '../../wiring/services.js';
import { CARRYING, effectsSettled, sweepPlaces } from '../call-analysis/lost-effects.js';
import { everyFirmSlug } from '../firms/firms.js';
import { chatEffectsCollection } from './chat-effects.js';
import { chatsEndedBetween, type ChatEnd } from './chats.js';

// Lost chat effects (docs/webhooks.md#chats): end-chat runs the lead and adds the chat-effects
// job before it answers; a Redis failover can lose that add after the answer, and a process that
// dies between the chat's end and the add leaves the chat without its job. The firm then never
// gets its Clio matter, its mail or its Slack message, and get-chat shows them `pending` for ever.
// The lost-calls sweep (every LOST_CALL_SWEEP_MS) also looks at each firm's chats that ended more
// than `endAfterMs` ago, read from the ends in the chats' log by an index range (`firm`, `kind`,
// `created_at`) from where the last pass got to (the firm's `lost_chat_sweeps` document) less
// `windowMs` — the log, so that a chat whose writer stopped after logging its end and before
// writing the chat document, which still says `ongoing`, is among them —, as it looks at ended calls
// for a lost analysis: a chat whose effects are not all settled (no effects document at all — its
// job was never added —, or one `pending` or `running`) while no chat-effects or chat-effect job of
// it waits, is delayed or runs has its chat-effects job added again (each effect is idempotent
// through the recorder: what was done is found done). A firm's first pass looks back an hour: a
// chat ended before that, as those of deploys before the effects existed, is never taken up, so
// no firm is mailed about a chat that ended days ago.

/** Chats looked at together: their effects read, their jobs' states asked of Redis at once. */
const CHUNK = 200;

export interface LostChatsSweep {
  /** Ended chats looked at. */
  checked: number;
  /** Chats whose effects' job was lost: their chat-effects job added again. */
  rerun: number;
}

/**
 * One pass over every firm's chats ended from where its last pass got to (less `windowMs`) up to
 * `endAfterMs` ago.
 */
export async function sweepLostChats(
  services: Services,
  ages: { endAfterMs: number; windowMs: number },
): Promise<LostChatsSweep> {
  const sweep: LostChatsSweep = { checked: 0, rerun: 0 };
  const named: string[] = [];
  const endCutoff = Date.now() - ages.endAfterMs;
  const places = sweepPlaces(services, COLLECTIONS.lostChatSweeps);
  for await (const firm of everyFirmSlug(services.mongo.db)) {
    const from = await places.from(firm, endCutoff, ages.windowMs);
    let batch: ChatEnd[] = [];
    for await (const chat of chatsEndedBetween(
      services.mongo.db,
      firm,
      new Date(from),
      new Date(endCutoff),
    )) {
      batch.push(chat);
      if (batch.length < CHUNK) continue;
      await rerunLost(services, batch, sweep, named);
      batch = [];
    }
    await rerunLost(services, batch, sweep, named);
    await places.keep(firm, endCutoff);
  }
  if (sweep.rerun > 0) services.log.warn({ ...sweep, chats: named }, 'lost chats: effects taken up');
  return sweep;
}

/** Adds again the chat-effects job of each of these chats whose effects stopped unsettled. */
async function rerunLost(
  services: Services,
  chats: ChatEnd[],
  sweep: LostChatsSweep,
  named: string[],
): Promise<void> {
  sweep.checked += chats.length;
  const records = chatEffectsCollection(services.mongo.db);
  const queue = services.queues[JOBS.chatEffects.queue];
  for (const chat of chats) {
    // One point read each: no `$in` over the batch.
    const doc = await records.findOne({ _id: chat._id }, { projection: { effects: 1 } });
    if (effectsSettled(doc?.effects)) continue;
    const job = { firm: chat.firm, chatId: chat._id };
    const ids = [
      JOBS.chatEffects.id!(job),
      ...CALL_EFFECTS.map((effect) => JOBS.chatEffect.id!({ ...job, effect })),
    ];
    const states = await Promise.all(ids.map((id) => queue.getJobState(id)));
    if (states.some((state) => CARRYING.has(state))) continue;
    // A finished chat-effects job of this id is removed and added again: its run is what is lost.
    await enqueueRun(services.queues, JOBS.chatEffects, job);
    sweep.rerun += 1;
    if (named.length < 20) named.push(chat._id);
  }
}
