// Every job of one queue keeps its finished jobs alike. BullMQ trims a queue's whole completed (or
// failed) set to the count of the job that just finished (removeJobsByMaxCount), so one job kept
// shorter cuts its neighbours' history: a DNC sweep on the campaigns queue, kept 20, cut the
// campaign calls' last 100 to 20 after each opt-out (the soak's one-sample dip in kept keys).
import { describe, expect, it } from 'vitest';
import { JOBS } from '../../jobs/table.js';
import { DEFAULT_JOB_OPTIONS, QUEUE_NAMES } from '../../jobs/queues.js';

type Keep = boolean | number | { count?: number; age?: number } | undefined;

/** What trimming a finished job of this setting does to the rest of its queue. */
function trims(keep: Keep): string {
  if (keep === true) return 'removes only itself';
  if (keep === false || keep === undefined) return 'trims nothing';
  if (typeof keep === 'number') return `keeps the last ${keep}`;
  return `keeps the last ${keep.count ?? 'all'} for ${keep.age ?? 'ever'} s`;
}

describe('job retention', () => {
  for (const kind of ['removeOnComplete', 'removeOnFail'] as const) {
    it(`is the same ${kind} for every job of a queue that trims by count`, () => {
      const mixed: string[] = [];
      for (const queue of QUEUE_NAMES) {
        const settings = new Map<string, string[]>();
        for (const [key, def] of Object.entries(JOBS)) {
          if (def.queue !== queue) continue;
          const effect = trims((def.options?.[kind] ?? DEFAULT_JOB_OPTIONS[kind]) as Keep);
          if (effect === 'removes only itself') continue; // trims nobody else
          settings.set(effect, [...(settings.get(effect) ?? []), key]);
        }
        if (settings.size > 1) {
          mixed.push(`${queue}: ${[...settings].map(([e, keys]) => `${keys.join(', ')} ${e}`).join('; ')}`);
        }
      }
      expect(mixed).toEqual([]);
    });
  }

  it('keeps the campaigns queue at its default after a DNC sweep', () => {
    expect(JOBS.dncSweep.options?.removeOnComplete ?? DEFAULT_JOB_OPTIONS.removeOnComplete).toEqual(
      DEFAULT_JOB_OPTIONS.removeOnComplete,
    );
    expect(JOBS.dncSweep.options?.removeOnFail ?? DEFAULT_JOB_OPTIONS.removeOnFail).toEqual(
      DEFAULT_JOB_OPTIONS.removeOnFail,
    );
  });
});
