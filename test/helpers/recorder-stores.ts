import type { Collection, Document } from 'mongodb';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import type {
  Effect,
  EffectLeaseDoc,
  EffectRecord,
  EffectSubject,
  EffectSubjectDoc,
} from '../../core/platform/db/effect-records.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { loggedStoresWithRedis } from './command-log.js';
import { rand } from './stack.js';

/** The lease a test subject's running effects hold (EffectSubject.lease). */
export const RECORDER_LEASE_MS = 30_000;

/**
 * A test file's subjects for the effect recorder, wired as a call's effects are: the service's
 * Redis lock (its keys under `lockPrefix`), a lease, the records in a document of their own; on a
 * command-logging client (`commands`: every command it sent, as `<command> <collection>`), its
 * database dropped after the file's tests.
 */
export function recorderStores(lockPrefix: string) {
  const { client, commands, redis } = loggedStoresWithRedis();
  const subjects = (): Collection<EffectSubjectDoc> => client.db().collection<EffectSubjectDoc>('subjects');
  const records = (): Collection<EffectSubjectDoc> =>
    client.db().collection<EffectSubjectDoc>('subject_effects');
  const leases = (): Collection<EffectLeaseDoc> => client.db().collection<EffectLeaseDoc>('effect_leases');
  const lockOf = (id: string) => `${lockPrefix}:${id}`;
  const subjectOf = (id: string): EffectSubject => ({
    collection: subjects(),
    id,
    exclusive: (write) => withRecordLock(redis, lockOf(id), write, { ttlMs: 30_000 }),
    lease: { collection: leases(), ms: RECORDER_LEASE_MS, clockMarginMs: 0 },
    records: records(),
  });
  return {
    client,
    commands,
    redis,
    subjects,
    records,
    leases,
    lockOf,
    subjectOf,
    /**
     * As a subject whose job read its records document before its effects began (`seen`: effects
     * given this one subject gather their marks); `turns` counts its lock's turns.
     */
    seenSubjectOf(id: string, seen: Document | null): EffectSubject & { turns: () => number } {
      const subject = subjectOf(id);
      let turns = 0;
      return {
        ...subject,
        exclusive: (write) => (turns++, subject.exclusive(write)),
        seen: { doc: seen },
        turns: () => turns,
      };
    },
    /** A new subject document; its id. */
    async newSubject(): Promise<string> {
      const id = `call_${rand(4)}`;
      await subjects().insertOne({ _id: id });
      return id;
    },
    /** The commands `run` sends, counted by kind and collection. */
    async costOf(run: () => Promise<unknown>): Promise<Record<string, number>> {
      const from = commands.length;
      await run();
      const counts: Record<string, number> = {};
      for (const command of commands.slice(from)) counts[command] = (counts[command] ?? 0) + 1;
      return counts;
    },
  };
}

/**
 * Four attempts at one effect at once, each its own job (`subject()` gives each its subject), each
 * sending only once `release()` is called: what a race over one record leaves. `performed` counts
 * the sends begun, `failures` the attempts that gave up; `settled()` the records of the others.
 */
export function fourAttemptsAtOnce(subject: () => EffectSubject, effect: Effect<{ message_id: string }>) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const race = { performed: 0, failures: [] as unknown[] };
  const attempts = Array.from({ length: 4 }, () =>
    runEffect(subject(), effect, { lastAttempt: false }, async () => {
      race.performed++;
      await held;
      return { state: 'done', result: { message_id: `<m${race.performed}@test>` } };
    }).catch((err: unknown): EffectRecord<{ message_id: string }> | null => {
      race.failures.push(err);
      return null;
    }),
  );
  return Object.assign(race, {
    release: () => release(),
    settled: async () => (await Promise.all(attempts)).filter((r) => r !== null),
  });
}
