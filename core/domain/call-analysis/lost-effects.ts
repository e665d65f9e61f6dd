import type { JobState } from 'bullmq';
import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';
import type { EffectRecord } from '../../platform/db/effect-records.js';
import { collection, type CollectionName } from '../../platform/db/collections.js';
import { updateById } from '../../platform/db/upsert.js';
import type { Services } from '../../wiring/services.js';

// What the lost-calls sweep's passes over ended calls and ended chats share
// (core/domain/calls/lost-calls.ts, core/domain/chats/lost-chats.ts): a firm's place in its ended
// subjects, where the next pass starts, and what counts as settled effects and as a job that still
// carries them.

/** Where a firm's first pass starts looking, before its window. */
export const FIRST_LOOK_BACK_MS = 3_600_000;

/** The pipeline's jobs that carry a subject while they wait or run (a finished job carries nothing). */
export const CARRYING = new Set<JobState | 'unknown'>([
  'waiting',
  'delayed',
  'active',
  'prioritized',
  'waiting-children',
]);

/** Every one of the four effects recorded and final: done, skipped, or failed for good. */
export function effectsSettled(effects: Partial<Record<CallEffectName, EffectRecord>> | undefined): boolean {
  return CALL_EFFECTS.every((name) => {
    const state = effects?.[name]?.state;
    return state !== undefined && state !== 'pending' && state !== 'running';
  });
}

/** The sweep's place in a firm's ended subjects (`_id` = the firm). */
interface SweepPlace {
  _id: string;
  /** The end time (ms) up to which the last pass looked. */
  ended_until: number;
  updated_at: Date;
}

/** A firm's sweep place, kept in `places`. */
export function sweepPlaces(services: Services, places: CollectionName) {
  const docs = collection<SweepPlace>(services.mongo.db, places);
  return {
    /** Where this pass starts: where the last got to (or the first look-back) less `windowMs`. */
    async from(firm: string, endCutoff: number, windowMs: number): Promise<number> {
      const place = await docs.findOne({ _id: firm });
      return (place?.ended_until ?? endCutoff - FIRST_LOOK_BACK_MS) - windowMs;
    },
    /**
     * Never back: a pass with a longer end age, or one that stopped early, leaves the place another
     * got to (two passes at once at worst look at some subjects again).
     */
    async keep(firm: string, until: number): Promise<void> {
      await updateById(docs, firm, { $max: { ended_until: until }, $set: { updated_at: new Date() } });
    },
  };
}
