// An effect's first look from the records document as the job read it before its effects began
// (EffectSubject.seen, the effect recorder's "from what was seen"): a record seen settled is
// returned with no lock and no read; a repeatable one not begun goes unmarked with no lock and no
// read; one to mark is marked by a write whose filter is the record as seen, and read under the
// lock only when another attempt wrote it since. What was seen may be stale: attempts racing from
// the same stale version leave exactly one marking and sending, and a record done since is not
// done again. The commands are counted by the MongoDB driver's own command monitoring of a real
// FerretDB; the lock is the service's Redis lock, its turns counted.
import { describe, expect, it } from 'vitest';
import type { Document } from 'mongodb';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import {
  EffectBusyError,
  type Effect,
  type EffectRecord,
  type EffectSubject,
} from '../../core/platform/db/effect-records.js';
import { eventually } from '../helpers/eventually.js';
import {
  RECORDER_LEASE_MS as LEASE_MS,
  fourAttemptsAtOnce,
  recorderStores,
} from '../helpers/recorder-stores.js';

const stores = recorderStores('test:effect-seen');
const { commands, records, subjects, newSubject, costOf } = stores;

/** As a call's effects are wired, with what the job saw; `turns` counts the lock's. */
const subjectOf = (id: string, seen: Document | null) => stores.seenSubjectOf(id, seen);

type Stored = { effects?: Record<string, EffectRecord> } | null;
const stored = async (id: string) => (await records().findOne({ _id: id })) as Stored;

const mail: Effect<{ message_id: string }> = { path: 'effects.mail' };
const lead: Effect<{ lead_id: string }> = { path: 'effects.lead', repeatable: true };

/** A perform that counts its calls. */
function sender() {
  let performed = 0;
  return {
    performed: () => performed,
    perform: async () => {
      performed++;
      return { state: 'done' as const, result: { message_id: `<m${performed}@test>` } };
    },
  };
}

const done = (result: Record<string, unknown>): EffectRecord => ({
  state: 'done',
  attempts: 1,
  started_at: new Date(),
  finished_at: new Date(),
  last_error: null,
  result,
  lease_token: null,
  lease_until: null,
});

describe('the first look from what the job saw', () => {
  it('none seen: no read; the mark makes the records document, and the settle follows', async () => {
    const id = await newSubject();
    const subject = subjectOf(id, null);
    const mails = sender();
    let record: unknown;
    const cost = await costOf(async () => {
      record = await runEffect(subject, mail, { lastAttempt: false }, mails.perform);
      await eventually(async () => expect(commands.at(-1)).toBe('delete effect_leases'), 15_000, 10);
    });
    expect(record).toMatchObject({ state: 'done', attempts: 1, result: { message_id: '<m1@test>' } });
    expect(cost).toEqual({
      'update subject_effects': 2,
      'insert effect_leases': 1,
      'delete effect_leases': 1,
    });
    expect((await stored(id))?.effects?.mail).toMatchObject({ state: 'done', attempts: 1 });
    expect(mails.performed()).toBe(1);
  });

  it('seen done: returned as seen, with no lock, no read and nothing performed', async () => {
    const id = await newSubject();
    const record = done({ message_id: '<m0@test>' });
    const subject = subjectOf(id, { _id: id, effects: { mail: record } });
    const mails = sender();
    let result: unknown;
    const cost = await costOf(async () => {
      result = await runEffect(subject, mail, { lastAttempt: false }, mails.perform);
    });
    expect(cost).toEqual({});
    expect(subject.turns()).toBe(0);
    expect(mails.performed()).toBe(0);
    expect(result).toMatchObject({ state: 'done', result: { message_id: '<m0@test>' } });
  });

  it('a repeatable effect seen not begun: performed with no lock and no read before it, settled in one write', async () => {
    const id = await newSubject();
    const subject = subjectOf(id, null);
    let performed = 0;
    let result: unknown;
    const cost = await costOf(async () => {
      result = await runEffect(subject, lead, { lastAttempt: false }, async () => {
        performed++;
        return { state: 'done', result: { lead_id: 'lead_1' } };
      });
    });
    expect(performed).toBe(1);
    expect(cost).toEqual({ 'update subject_effects': 1 });
    // The settle's write: the lock's one turn.
    expect(subject.turns()).toBe(1);
    expect(result).toMatchObject({ state: 'done', result: { lead_id: 'lead_1' } });
    expect((await stored(id))?.effects?.lead).toMatchObject({ state: 'done', result: { lead_id: 'lead_1' } });
  });

  it('seen with no document, done since by another attempt: the mark is refused, the record read, nothing sent again', async () => {
    const id = await newSubject();
    const before = done({ message_id: '<m0@test>' });
    await records().insertOne({ _id: id, effects: { mail: before } });
    const mails = sender();
    let result: unknown;
    const cost = await costOf(async () => {
      result = await runEffect(subjectOf(id, null), mail, { lastAttempt: false }, mails.perform);
    });
    expect(mails.performed()).toBe(0);
    expect(result).toMatchObject({ state: 'done', result: { message_id: '<m0@test>' } });
    expect((await stored(id))?.effects?.mail).toEqual(before);
    // The refused mark, then the read under the lock.
    expect(cost).toEqual({ 'update subject_effects': 1, 'find subject_effects': 1 });
  });

  it('seen without the record, marked since by another attempt under a live lease: refused, read, and waits for that lease', async () => {
    const id = await newSubject();
    const running: EffectRecord = {
      ...done({}),
      state: 'running',
      result: null,
      finished_at: null,
      lease_token: 'live',
      lease_until: new Date(Date.now() + LEASE_MS),
    };
    // What the job saw: the document, with another effect's record and none of the mail's.
    const seen = { _id: id, effects: { lead: done({ lead_id: 'lead_1' }) } };
    await records().insertOne({ ...seen, effects: { ...seen.effects, mail: running } });
    const mails = sender();
    const cost = await costOf(() =>
      expect(
        runEffect(subjectOf(id, seen), mail, { lastAttempt: false }, mails.perform),
      ).rejects.toBeInstanceOf(EffectBusyError),
    );
    expect(mails.performed()).toBe(0);
    // The refused mark, the read under the lock; then the answer that attempt may have stored and
    // its lease's renewal, looked at.
    expect(cost).toEqual({
      'update subject_effects': 1,
      'find subject_effects': 1,
      'find effect_leases': 2,
    });
    expect((await stored(id))?.effects?.mail).toEqual(running);
    expect((await stored(id))?.effects?.lead).toMatchObject({ state: 'done' });
  });

  it('seen failed, marked again since: the mark from the older version is refused', async () => {
    const id = await newSubject();
    const failed: EffectRecord = { ...done({}), state: 'failed', result: null, last_error: 'refused' };
    const seen = { _id: id, effects: { mail: failed } };
    // Since then another attempt marked it and sent: done at attempts 2.
    const now = { ...done({ message_id: '<m9@test>' }), attempts: 2 };
    await records().insertOne({ _id: id, effects: { mail: now } });
    const mails = sender();
    let result: unknown;
    const cost = await costOf(async () => {
      result = await runEffect(subjectOf(id, seen), mail, { lastAttempt: false }, mails.perform);
    });
    expect(mails.performed()).toBe(0);
    expect(cost).toEqual({ 'update subject_effects': 1, 'find subject_effects': 1 });
    expect(result).toMatchObject({ state: 'done', attempts: 2, result: { message_id: '<m9@test>' } });
    expect((await stored(id))?.effects?.mail).toEqual(now);
  });

  it('seen failed and unchanged: marked from it with no read (its attempts go on from it), sent once', async () => {
    const id = await newSubject();
    const failed: EffectRecord = { ...done({}), state: 'failed', result: null, last_error: 'refused' };
    await records().insertOne({ _id: id, effects: { mail: failed } });
    const mails = sender();
    const cost = await costOf(() =>
      runEffect(
        subjectOf(id, { _id: id, effects: { mail: failed } }),
        mail,
        { lastAttempt: false },
        mails.perform,
      ),
    );
    expect(mails.performed()).toBe(1);
    expect(cost['find subject_effects'] ?? 0).toBe(0);
    expect((await stored(id))?.effects?.mail).toMatchObject({
      state: 'done',
      attempts: 2,
      result: { message_id: '<m1@test>' },
    });
  });

  it('on the subject itself (as a call holds its dial): marked from the subject as seen with no read; marked since by another attempt, refused and read', async () => {
    const id = await newSubject();
    const onSubject = (seen: Document): EffectSubject => {
      const { records: _records, ...subject } = stores.subjectOf(id);
      return { ...subject, seen: { doc: seen } };
    };
    const dial: Effect<{ message_id: string }> = { path: 'dial' };
    const seen = { _id: id, dial: { ...done({}), state: 'pending', attempts: 0, result: null } };
    await subjects().updateOne({ _id: id }, { $set: { dial: seen.dial } });
    const mails = sender();
    const cost = await costOf(() => runEffect(onSubject(seen), dial, { lastAttempt: false }, mails.perform));
    expect(mails.performed()).toBe(1);
    // The mark and the settle, and no read of the subject.
    expect(cost['update subjects']).toBe(2);
    expect(cost['find subjects'] ?? 0).toBe(0);
    const marked = (await subjects().findOne({ _id: id }))?.dial;
    expect(marked).toMatchObject({ state: 'done', attempts: 1, result: { message_id: '<m1@test>' } });
    // The same version seen again: the record moved on since, so the write is refused and read.
    const again = await costOf(() => runEffect(onSubject(seen), dial, { lastAttempt: false }, mails.perform));
    expect(mails.performed()).toBe(1);
    expect(again['update subjects']).toBe(1);
    expect(again['find subjects']).toBe(1);
    expect((await subjects().findOne({ _id: id }))?.dial).toEqual(marked);
  });

  it('attempts racing from the same stale version: exactly one marks and sends, the others find it under way', async () => {
    const id = await newSubject();
    const from = commands.length;
    // Each saw no records document; each is its own job (its own subject, its own lock turns).
    const race = fourAttemptsAtOnce(() => subjectOf(id, null), mail);
    await eventually(async () => expect(race.failures).toHaveLength(3), 20_000, 10);
    for (const err of race.failures) expect(err).toBeInstanceOf(EffectBusyError);
    expect(race.performed).toBe(1);
    // Four marks from what was seen, one written and three refused; the three then read.
    const sent = commands.slice(from);
    expect(sent.filter((c) => c === 'update subject_effects')).toHaveLength(4);
    expect(sent.filter((c) => c === 'find subject_effects')).toHaveLength(3);
    expect((await stored(id))?.effects?.mail).toMatchObject({ state: 'running', attempts: 1 });
    race.release();
    expect(await race.settled()).toEqual([expect.objectContaining({ state: 'done', attempts: 1 })]);
    expect(race.performed).toBe(1);
  });
});
