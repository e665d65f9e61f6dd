// Settles carried (core/platform/db/effect-recorder.ts): on a subject with a carry, the settle of
// an effect that can be repeated or asked about is not written on its own. It goes with the records
// document's next write; with none for `lingerMs`, on its own then; and what is left with
// flushCarried, in one write. An effect whose answer is stored first still writes its settle at
// once. Against a real FerretDB (commands counted by the driver's own monitoring) and the
// service's Redis lock.
import { describe, expect, it } from 'vitest';
import {
  flushCarried,
  newSettleCarry,
  runEffect,
  type Effect,
  type EffectLeaseDoc,
  type EffectSubject,
  type EffectSubjectDoc,
} from '../../core/platform/db/effect-recorder.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { eventually } from '../helpers/eventually.js';
import { rand } from '../helpers/stack.js';
import { loggedStoresWithRedis } from '../helpers/command-log.js';

// `commands`: every command this file's client sent, as `<command> <collection>`.
const { client, commands, redis } = loggedStoresWithRedis();

const records = () => client.db().collection<EffectSubjectDoc>('carried_effects');

/** As the analysis job wires a call's effects: the lock in Redis, a lease, a records document, a carry. */
function carryingSubject(lingerMs: number): EffectSubject {
  const id = `call_${rand(4)}`;
  return {
    collection: client.db().collection<EffectSubjectDoc>('carried_subjects'),
    id,
    exclusive: (write) =>
      withRecordLock(redis, `test:effect-settles-carried:${id}`, write, { ttlMs: 30_000, keepsMemo: true }),
    lease: {
      collection: client.db().collection<EffectLeaseDoc>('effect_leases'),
      ms: 30_000,
      clockMarginMs: 0,
    },
    records: records(),
    carry: newSettleCarry(lingerMs),
  };
}

const stateAt = async (subject: EffectSubject, name: string) =>
  ((await records().findOne({ _id: subject.id })) as { effects?: Record<string, { state: string }> } | null)
    ?.effects?.[name]?.state;

/** The updates of the records document `run` sends. */
async function updatesOf(run: () => Promise<unknown>): Promise<number> {
  const from = commands.length;
  await run();
  return commands.slice(from).filter((c) => c === 'update carried_effects').length;
}

const lead: Effect<{ lead_id: string }> = { path: 'effects.lead', repeatable: true };
const crm: Effect<{ id: number }> = { path: 'effects.crm', reconcile: async () => null };
const mail: Effect<{ message_id: string }> = { path: 'effects.mail' };
const done =
  <R>(result: R) =>
  async () => ({ state: 'done' as const, result });
const attempt = { lastAttempt: false };

describe('settles carried', () => {
  it("a repeatable effect's settle is not written on its own: the next effect's mark takes it, in one write", async () => {
    const subject = carryingSubject(60_000);
    expect(await updatesOf(() => runEffect(subject, lead, attempt, done({ lead_id: 'lead_1' })))).toBe(0);
    expect(await stateAt(subject, 'lead')).toBeUndefined();
    // The CRM's mark (an effect that can be asked about is marked) writes the lead's settle with it.
    let marked = -1;
    await runEffect(subject, crm, attempt, async () => {
      marked = commands.filter((c) => c === 'update carried_effects').length;
      expect(await stateAt(subject, 'lead')).toBe('done');
      return { state: 'done', result: { id: 7 } };
    });
    expect(marked).toBeGreaterThan(0);
    // The CRM's settle is carried in turn, and flushCarried writes it: one write, then none.
    expect(await stateAt(subject, 'crm')).toBe('running');
    expect(await updatesOf(() => flushCarried(subject))).toBe(1);
    expect(await stateAt(subject, 'crm')).toBe('done');
    expect(await updatesOf(() => flushCarried(subject))).toBe(0);
  });

  it('a settle no write comes for is written on its own after lingerMs', async () => {
    const subject = carryingSubject(150);
    await runEffect(subject, lead, attempt, done({ lead_id: 'lead_2' }));
    expect(await stateAt(subject, 'lead')).toBeUndefined();
    await eventually(async () => expect(await stateAt(subject, 'lead')).toBe('done'), 5_000, 25);
    // Nothing is left for the job's end.
    expect(await updatesOf(() => flushCarried(subject))).toBe(0);
  });

  it('an effect whose answer is stored first writes its settle at once, with what the carry holds', async () => {
    const subject = carryingSubject(60_000);
    await runEffect(subject, lead, attempt, done({ lead_id: 'lead_3' }));
    // The mark and the settle: both written, the lead's settle with the first.
    expect(await updatesOf(() => runEffect(subject, mail, attempt, done({ message_id: 'm_1' })))).toBe(2);
    expect(await stateAt(subject, 'mail')).toBe('done');
    expect(await stateAt(subject, 'lead')).toBe('done');
    expect(await updatesOf(() => flushCarried(subject))).toBe(0);
  });
});
