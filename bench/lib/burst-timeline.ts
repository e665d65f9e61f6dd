// Where a burst of simulated calls spends its wall time (docs/performance.md, "Where a burst's
// five seconds go"):
// when each call was created, dialled, started, ended, analysed and had its effects done, as
// percentiles from the burst's start, and how busy the machine was in each quarter second.
import type { Db } from 'mongodb';
import { callEffectsCollection, callsCollection, type CallDoc } from '../../core/domain/calls/calls.js';
import { machineTicks, percentile } from './measure.js';

/** The machine's busy share in each `everyMs` from start to stop, in percent. */
export class BusySampler {
  private readonly shares: number[] = [];
  private last = machineTicks();
  private readonly timer: NodeJS.Timeout;

  constructor(everyMs = 250) {
    this.timer = setInterval(() => {
      const now = machineTicks();
      const total = now.total - this.last.total;
      if (total > 0) this.shares.push((100 * (now.busy - this.last.busy)) / total);
      this.last = now;
    }, everyMs);
  }

  stop(): number[] {
    clearInterval(this.timer);
    return this.shares;
  }
}

const ms = (d: Date | null | undefined): number | undefined => (d instanceof Date ? d.getTime() : undefined);

/**
 * The burst's calls (created at or after `startedAt`, epoch ms), stage by stage: min, p10, p50,
 * p90 and max of each stage's time from the burst's start, in ms. Point reads of each call's
 * effects document, after the burst.
 */
export async function burstTimeline(db: Db, startedAt: number): Promise<string> {
  // The bench's own database of a few hundred calls, read once after the burst.
  const calls = await callsCollection(db)
    .find({ created_at: { $gte: new Date(startedAt) } })
    .toArray();
  const effects = callEffectsCollection(db);
  const done: Array<number | undefined> = [];
  for (const call of calls) {
    const records = Object.values((await effects.findOne({ _id: call._id }))?.effects ?? {});
    const finished = records.map((r) => ms(r?.finished_at));
    done.push(
      finished.length > 0 && finished.every((t) => t !== undefined)
        ? Math.max(...(finished as number[]))
        : undefined,
    );
  }
  const stage = (name: string, at: Array<number | null | undefined>): string => {
    const xs = at.filter((t): t is number => typeof t === 'number').map((t) => t - startedAt);
    xs.sort((a, b) => a - b);
    const qs = [0, 0.1, 0.5, 0.9, 1].map((q) => percentile(xs, q).toFixed(0));
    return `${name} ${qs.join('/')}${xs.length < calls.length ? ` (${xs.length})` : ''}`;
  };
  const stages: Array<[string, (c: CallDoc) => number | null | undefined]> = [
    ['created', (c) => ms(c.created_at)],
    ['dialled', (c) => ms(c.dial?.finished_at)],
    ['started', (c) => c.start_timestamp],
    ['ended', (c) => c.end_timestamp],
    ['analysed', (c) => ms(c.extraction?.extracted_at)],
  ];
  const times = [...stages.map(([name, at]) => stage(name, calls.map(at))), stage('effects done', done)];
  return `${calls.length} calls, ms from the burst's start (min/p10/p50/p90/max): ${times.join('; ')}`;
}
