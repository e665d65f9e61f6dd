// What one effect record costs the store, and the guarantees that cost keeps (the effect recorder,
// core/platform/db/effect-recorder.ts): a new record is read once, under the subject's lock, and
// marked from that version; a record done costs that read and no mark; attempts racing a new
// record leave exactly one marking and sending, the others finding it under way; a record left
// `running` is still looked into without the lock and marked only from the version first read;
// an effect that can be repeated harmlessly stores no answer before its record. The commands are
// counted by the MongoDB driver's own command monitoring of a real FerretDB; the lock is the
// service's Redis lock.
import { describe, expect, it } from 'vitest';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import { EffectBusyError, EffectRaceError, type Effect } from '../../core/platform/db/effect-records.js';
import { EffectGate } from '../../core/platform/db/effect-gate.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { eventually } from '../helpers/eventually.js';
import {
  RECORDER_LEASE_MS as LEASE_MS,
  fourAttemptsAtOnce,
  recorderStores,
} from '../helpers/recorder-stores.js';
import { runningLeftByDeadAttempt } from '../helpers/effect-records.js';

// `commands`: every command this file's client sent, as `<command> <collection>`; `subjectOf`: as
// a call's effects are wired (the lock in Redis, a lease, the records in a document of their own).
const { commands, redis, records, leases, lockOf, subjectOf, newSubject, costOf } =
  recorderStores('test:effect-first-look');

const recordOf = async (id: string) =>
  ((await records().findOne({ _id: id })) as { effects?: Record<string, Record<string, unknown>> } | null)
    ?.effects?.mail;

const mail: Effect<{ message_id: string }> = { path: 'effects.mail' };
const sent = (id: string) => async () => ({ state: 'done' as const, result: { message_id: id } });

describe('one effect record', () => {
  it('a new record is read once, under the lock, marked from that version, settled; its answer stored first and dropped', async () => {
    const id = await newSubject();
    let record: unknown;
    const cost = await costOf(async () => {
      record = await runEffect(subjectOf(id), mail, { lastAttempt: false }, sent('<m1@test>'));
      // The answer's document is dropped without waiting for it: its delete is sent a moment later.
      await eventually(async () => expect(commands.at(-1)).toBe('delete effect_leases'), 15_000, 10);
    });
    console.log('commands for a new record:', JSON.stringify(cost));
    expect(record).toMatchObject({ state: 'done', attempts: 1, result: { message_id: '<m1@test>' } });
    expect(cost).toEqual({
      'find subject_effects': 1,
      'update subject_effects': 2,
      'insert effect_leases': 1,
      'delete effect_leases': 1,
    });
    // The delete was sent (counted above) without being waited for: it lands a moment later.
    await eventually(async () => expect(await leases().countDocuments({})).toBe(0));
  });

  it('a record done costs that one read and no mark: nothing is performed', async () => {
    const id = await newSubject();
    await runEffect(subjectOf(id), mail, { lastAttempt: false }, sent('<m1@test>'));
    const before = await recordOf(id);
    let performed = 0;
    let record: unknown;
    const cost = await costOf(async () => {
      record = await runEffect(subjectOf(id), mail, { lastAttempt: false }, async () => {
        performed++;
        return { state: 'done', result: { message_id: '<m2@test>' } };
      });
    });
    expect(cost).toEqual({ 'find subject_effects': 1 });
    expect(performed).toBe(0);
    expect(record).toMatchObject({ state: 'done', attempts: 1, result: { message_id: '<m1@test>' } });
    expect(await recordOf(id)).toEqual(before);
  });

  it('attempts racing a new record: exactly one marks and sends, the others find it under way', async () => {
    const id = await newSubject();
    const race = fourAttemptsAtOnce(() => subjectOf(id), mail);
    // The three that came after the winner's turn of the lock find its live lease and wait for it.
    // (Within the lease's 30 s: after it, an attempt would take the record over.)
    await eventually(async () => expect(race.failures).toHaveLength(3), 20_000, 10);
    for (const err of race.failures) expect(err).toBeInstanceOf(EffectBusyError);
    expect(race.performed).toBe(1);
    expect(await recordOf(id)).toMatchObject({ state: 'running', attempts: 1 });
    race.release();
    expect(await race.settled()).toEqual([expect.objectContaining({ state: 'done', attempts: 1 })]);
    expect(race.performed).toBe(1);
  });

  it('a record left running is looked into without the lock, and marked only from the version first read', async () => {
    const id = await newSubject();
    // As a worker killed mid-request leaves it: running, its lease long over.
    await records().insertOne({
      _id: id,
      effects: { mail: runningLeftByDeadAttempt(LEASE_MS) },
    });
    // Two attempts ask the outside world at once; neither holds the lock meanwhile (the other's
    // question could not be asked if one did); both hear "not done".
    let asking = 0;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let lockFree = false;
    let performed = 0;
    // The winner sends only once the loser has its answer: the loser reads the winner's mark, not its outcome.
    let loserDone!: () => void;
    const lost = new Promise<void>((resolve) => (loserDone = resolve));
    const asked: Effect<{ message_id: string }> = {
      path: 'effects.mail',
      reconcile: async () => {
        asking++;
        if (asking === 2) {
          lockFree = await withRecordLock(redis, lockOf(id), async () => true, { waitMs: 0 });
          answer();
        }
        await answered;
        return null;
      },
    };
    const both = await Promise.all(
      [0, 1].map(() =>
        runEffect(subjectOf(id), asked, { lastAttempt: false }, async () => {
          // A second send (the race lost by nobody) lets the first go on too, so that it shows.
          if (++performed > 1) loserDone();
          await lost;
          return { state: 'done', result: { message_id: `<r${performed}@test>` } };
        }).then(
          (record) => ({ record }),
          (err: unknown) => (loserDone(), { err }),
        ),
      ),
    );
    expect({ asking, lockFree, performed }).toEqual({ asking: 2, lockFree: true, performed: 1 });
    const loser = both.find((r) => 'err' in r) as { err: unknown };
    expect(loser.err).toBeInstanceOf(EffectRaceError);
    expect(both.find((r) => 'record' in r)).toEqual({
      record: expect.objectContaining({ state: 'done', attempts: 2 }),
    });
  });

  it('an effect that can be repeated harmlessly is not marked and stores no answer first; left running, it is repeated', async () => {
    const id = await newSubject();
    const lead: Effect<{ lead_id: string }> = { path: 'effects.mail', repeatable: true };
    let performed = 0;
    const perform = async () => (performed++, { state: 'done' as const, result: { lead_id: 'lead_1' } });
    const cost = await costOf(() => runEffect(subjectOf(id), lead, { lastAttempt: false }, perform));
    // One read under the lock, one write at the settle: no `running` record in between.
    expect(cost).toEqual({ 'find subject_effects': 1, 'update subject_effects': 1 });
    expect(await recordOf(id)).toMatchObject({ state: 'done', attempts: 1, result: { lead_id: 'lead_1' } });
    // As a worker that died between its answer and its record leaves it: running, its lease over.
    await records().updateOne(
      { _id: id },
      {
        $set: {
          'effects.mail.state': 'running',
          'effects.mail.lease_token': 'dead',
          'effects.mail.lease_until': new Date(Date.now() - LEASE_MS),
        },
      },
    );
    const record = await runEffect(subjectOf(id), lead, { lastAttempt: false }, perform);
    expect(record).toMatchObject({ state: 'done', attempts: 2, result: { lead_id: 'lead_1' } });
    expect(performed).toBe(2);
  });

  it('a repeatable effect: overlapping attempts both perform with nothing marked, and a failure after a settle leaves it done', async () => {
    const id = await newSubject();
    const lead: Effect<{ lead_id: string }> = { path: 'effects.mail', repeatable: true };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let performing = 0;
    const first = runEffect(subjectOf(id), lead, { lastAttempt: true }, async () => {
      performing++;
      await held;
      throw new Error('the CRM went away');
    });
    const second = runEffect(subjectOf(id), lead, { lastAttempt: false }, async () => {
      performing++;
      await eventually(async () => expect(performing).toBe(2), 15_000, 5);
      return { state: 'done', result: { lead_id: 'lead_1' } };
    });
    // Both under way at once, and nothing recorded yet: no `running` record kept the second out.
    await eventually(async () => expect(performing).toBe(2), 15_000, 5);
    expect(await second).toMatchObject({ state: 'done', attempts: 1 });
    // The first fails on its job's last attempt after the second settled: the settle stands.
    release();
    await expect(first).rejects.toThrow('the CRM went away');
    expect(await recordOf(id)).toMatchObject({ state: 'done', result: { lead_id: 'lead_1' } });
    // Alone, the same failure on a last attempt is recorded `failed`, never `running`.
    const other = await newSubject();
    await expect(
      runEffect(subjectOf(other), lead, { lastAttempt: true }, async () => {
        throw new Error('the CRM went away');
      }),
    ).rejects.toThrow('the CRM went away');
    expect(await recordOf(other)).toMatchObject({
      state: 'failed',
      attempts: 1,
      last_error: 'the CRM went away',
    });
  });

  it("a stopping worker's closed gate: nothing is marked, and the lock is let go of", async () => {
    const id = await newSubject();
    const gate = new EffectGate();
    gate.close();
    let performed = 0;
    let returned = false;
    const from = commands.length;
    void runEffect(subjectOf(id), mail, { lastAttempt: false, gate }, async () => {
      performed++;
      return { state: 'done', result: { message_id: '<m1@test>' } };
    }).then(() => (returned = true));
    // It read the record under the lock; parked, it has nothing under way, and the subject's lock
    // is free for its other writers (not held until its expiry, 30 s: the wait stays well short of it).
    await eventually(async () => expect(commands.slice(from)).toContain('find subject_effects'), 15_000, 10);
    await eventually(
      async () => expect(await withRecordLock(redis, lockOf(id), async () => true, { waitMs: 0 })).toBe(true),
      15_000,
      20,
    );
    expect(gate.busy).toBe(false);
    expect({ performed, returned, marked: await recordOf(id) }).toEqual({
      performed: 0,
      returned: false,
      marked: undefined,
    });
  });
});
