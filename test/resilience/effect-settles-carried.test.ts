// Settles carried (core/platform/db/effect-recorder.ts): on a subject with a carry, the settle of
// an effect that can be repeated or asked about is not written on its own. It goes with the records
// document's next write; with none for `lingerMs`, on its own then; and what is left with
// flushCarried, in one write. An effect whose answer is stored first (a mail) is carried too, its
// answer document kept until the carrying write: a process that dies before it leaves that answer
// for the next attempt, which records it and sends nothing. Against a real FerretDB (commands
// counted by the driver's own monitoring) and the service's Redis lock.
import { describe, expect, it } from 'vitest';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import { flushCarried } from '../../core/platform/db/effect-record-writes.js';
import {
  newSettleCarry,
  type Effect,
  type EffectLeaseDoc,
  type EffectSubject,
  type EffectSubjectDoc,
} from '../../core/platform/db/effect-records.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { eventually } from '../helpers/eventually.js';
import { rand } from '../helpers/stack.js';
import { loggedStoresWithRedis } from '../helpers/command-log.js';

// `commands`: every command this file's client sent, as `<command> <collection>`.
const { client, commands, redis } = loggedStoresWithRedis();

const records = () => client.db().collection<EffectSubjectDoc>('carried_effects');

/** As the analysis job wires a call's effects: the lock in Redis, a lease, a records document, a carry. */
function carryingSubject(lingerMs: number, leaseMs = 30_000, id = `call_${rand(4)}`): EffectSubject {
  return {
    collection: client.db().collection<EffectSubjectDoc>('carried_subjects'),
    id,
    exclusive: (write) =>
      withRecordLock(redis, `test:effect-settles-carried:${id}`, write, { ttlMs: 30_000, keepsMemo: true }),
    lease: {
      collection: client.db().collection<EffectLeaseDoc>('effect_leases'),
      ms: leaseMs,
      clockMarginMs: 0,
    },
    records: records(),
    carry: newSettleCarry(lingerMs),
  };
}

const stateAt = async (subject: EffectSubject, name: string) =>
  ((await records().findOne({ _id: subject.id })) as { effects?: Record<string, { state: string }> } | null)
    ?.effects?.[name]?.state;

/** The answers stored first for the subject's mail and not yet let go. */
async function answersOf(subject: EffectSubject): Promise<unknown[]> {
  const docs = await subject
    .lease!.collection.find({
      _id: { $regex: `^${subject.collection.collectionName}\\|${subject.id}\\|effects\\.mail\\|outcome\\|` },
    })
    .toArray();
  return docs.map((d) => (d as unknown as { outcome: unknown }).outcome);
}

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
    // Five seconds: the look right after the effect (one read of FerretDB) comes before it, however
    // loaded the machine.
    const subject = carryingSubject(5_000);
    await runEffect(subject, lead, attempt, done({ lead_id: 'lead_2' }));
    expect(await stateAt(subject, 'lead')).toBeUndefined();
    await eventually(async () => expect(await stateAt(subject, 'lead')).toBe('done'), 20_000, 25);
    // Nothing is left for the job's end.
    expect(await updatesOf(() => flushCarried(subject))).toBe(0);
  });

  it('an effect whose answer is stored first is carried once its answer is stored; the answer goes after the carrying write', async () => {
    const subject = carryingSubject(60_000);
    await runEffect(subject, lead, attempt, done({ lead_id: 'lead_3' }));
    // The mail's mark, with the lead's settle: one write; the mail's settle is carried.
    expect(await updatesOf(() => runEffect(subject, mail, attempt, done({ message_id: 'm_1' })))).toBe(1);
    expect(await stateAt(subject, 'lead')).toBe('done');
    expect(await stateAt(subject, 'mail')).toBe('running');
    // Its answer, stored before the record, stays until the record holding it is written.
    const stored = await answersOf(subject);
    expect(stored).toEqual([{ state: 'done', result: { message_id: 'm_1' } }]);
    expect(await updatesOf(() => flushCarried(subject))).toBe(1);
    expect(await stateAt(subject, 'mail')).toBe('done');
    // Its delete is sent after the write, without being waited for.
    await eventually(async () => expect(await answersOf(subject)).toEqual([]), 15_000, 25);
  });

  it('a carried mail lost with its process: the next attempt records the stored answer and sends nothing', async () => {
    const id = `call_${rand(4)}`;
    const dying = carryingSubject(60_000, 300, id);
    let sent = 0;
    await runEffect(dying, mail, attempt, async () => {
      sent += 1;
      return { state: 'done', result: { message_id: 'm_2' } };
    });
    // The process dies here: its carry is never written (no flush, its timer gone with it).
    clearTimeout(dying.carry!.timer);
    dying.carry!.pending.clear();
    expect(await stateAt(dying, 'mail')).toBe('running');
    expect(await answersOf(dying)).toHaveLength(1);
    // Another worker's attempt once the lease has run out: the answer is recorded, no second mail.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const next = carryingSubject(60_000, 300, id);
    const record = await runEffect(next, mail, attempt, async () => {
      sent += 1;
      return { state: 'done', result: { message_id: 'm_3' } };
    });
    expect(sent).toBe(1);
    expect(record).toMatchObject({ state: 'done', result: { message_id: 'm_2' } });
    expect(await stateAt(next, 'mail')).toBe('done');
    await eventually(async () => expect(await answersOf(next)).toEqual([]), 15_000, 25);
  });

  it("a mail's settle is written at once when its answer could not be stored", async () => {
    const subject = carryingSubject(60_000);
    // The answer's insert fails, once (MongoDB away for that moment).
    const lease = subject.lease!.collection;
    const insertOne = lease.insertOne.bind(lease);
    lease.insertOne = (async () => {
      lease.insertOne = insertOne;
      throw new Error('MongoDB away');
    }) as typeof lease.insertOne;
    expect(await updatesOf(() => runEffect(subject, mail, attempt, done({ message_id: 'm_4' })))).toBe(2);
    expect(await stateAt(subject, 'mail')).toBe('done');
    expect(await updatesOf(() => flushCarried(subject))).toBe(0);
  });
});
