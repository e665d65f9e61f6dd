// Marks gathered (the effect recorder's "marks gathered"): effects run together from one version
// of their records document as the job read it (one EffectSubject.seen for all: the analysis
// job's mail, Slack and the CRM's steps) are marked in one write, its filter every record as
// seen; the others find theirs written when their turn of the lock comes. A write refused
// because one record moved on since it was seen leaves each to be read and decided on its own;
// a stopping worker's closed gate lets none be marked; jobs racing from the same stale version
// still send each effect once. Real FerretDB (commands counted by the driver's monitoring) and
// the service's Redis lock.
import { describe, expect, it } from 'vitest';
import type { Document } from 'mongodb';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import {
  EffectBusyError,
  type Attempt,
  type Effect,
  type EffectRecord,
  type EffectSubject,
} from '../../core/platform/db/effect-records.js';
import { EffectGate } from '../../core/platform/db/effect-gate.js';
import { eventually } from '../helpers/eventually.js';
import { RECORDER_LEASE_MS as LEASE_MS, recorderStores } from '../helpers/recorder-stores.js';

const stores = recorderStores('test:effect-gathered');
const { commands, records, newSubject } = stores;

/** As the analysis job wires its effects, with what it saw; `turns` counts the lock's. */
const subjectOf = (id: string, seen: Document | null) => stores.seenSubjectOf(id, seen);

type Stored = { effects?: Record<string, EffectRecord> } | null;
const stored = async (id: string) => (await records().findOne({ _id: id })) as Stored;

const mail: Effect<{ sent: string }> = { path: 'effects.email' };
const slack: Effect<{ sent: string }> = { path: 'effects.team_chat' };

/** Sends held until `release()`; `performed` counts the sends begun, per effect path. */
function heldSends() {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const performed: Record<string, number> = {};
  const run = (
    subject: EffectSubject,
    effect: Effect<{ sent: string }>,
    attempt: Attempt = { lastAttempt: false },
  ) =>
    runEffect(subject, effect, attempt, async () => {
      performed[effect.path] = (performed[effect.path] ?? 0) + 1;
      await held;
      return { state: 'done' as const, result: { sent: `${effect.path}#${performed[effect.path]}` } };
    });
  return { run, performed, release: () => release() };
}

const updates = (from: number) => commands.slice(from).filter((c) => c === 'update subject_effects').length;
const finds = (from: number) => commands.slice(from).filter((c) => c === 'find subject_effects').length;

describe('marks gathered from one version seen', () => {
  it('two effects run together: both marked in one write, no read, each sent once', async () => {
    const id = await newSubject();
    const subject = subjectOf(id, null);
    const sends = heldSends();
    const from = commands.length;
    const both = Promise.all([sends.run(subject, mail), sends.run(subject, slack)]);
    // Both under way (marked), their sends held: one write made the records document with both.
    await eventually(
      async () => expect(sends.performed).toEqual({ 'effects.email': 1, 'effects.team_chat': 1 }),
      15_000,
      10,
    );
    expect(updates(from)).toBe(1);
    expect(finds(from)).toBe(0);
    const marked = await stored(id);
    expect(marked?.effects?.email).toMatchObject({
      state: 'running',
      attempts: 1,
      lease_token: expect.any(String),
    });
    expect(marked?.effects?.team_chat).toMatchObject({
      state: 'running',
      attempts: 1,
      lease_token: expect.any(String),
    });
    expect(marked?.effects?.email?.lease_token).not.toBe(marked?.effects?.team_chat?.lease_token);
    const settling = commands.length;
    sends.release();
    expect(await both).toEqual([
      expect.objectContaining({ state: 'done', attempts: 1, result: { sent: 'effects.email#1' } }),
      expect.objectContaining({ state: 'done', attempts: 1, result: { sent: 'effects.team_chat#1' } }),
    ]);
    // The two settles, nothing read.
    expect(updates(settling)).toBe(2);
    expect(finds(settling)).toBe(0);
    expect((await stored(id))?.effects).toMatchObject({
      email: { state: 'done', result: { sent: 'effects.email#1' } },
      team_chat: { state: 'done', result: { sent: 'effects.team_chat#1' } },
    });
    expect(sends.performed).toEqual({ 'effects.email': 1, 'effects.team_chat': 1 });
  });

  it('one of them marked since by another attempt under a live lease: the write is refused, that one waits for the lease, the other is marked and sent', async () => {
    const id = await newSubject();
    const running: EffectRecord = {
      state: 'running',
      attempts: 1,
      started_at: new Date(),
      finished_at: null,
      last_error: null,
      result: null,
      lease_token: 'live',
      lease_until: new Date(Date.now() + LEASE_MS),
    };
    // What the job saw: the document with neither record; since then another attempt marked the mail.
    const seen = { _id: id, effects: {} };
    await records().insertOne({ _id: id, effects: { email: running } });
    const subject = subjectOf(id, seen);
    const sends = heldSends();
    sends.release();
    const from = commands.length;
    const [mailed, posted] = await Promise.allSettled([sends.run(subject, mail), sends.run(subject, slack)]);
    expect(mailed.status).toBe('rejected');
    expect((mailed as PromiseRejectedResult).reason).toBeInstanceOf(EffectBusyError);
    expect(posted).toMatchObject({ status: 'fulfilled', value: { state: 'done', attempts: 1 } });
    expect(sends.performed).toEqual({ 'effects.team_chat': 1 });
    // The joint write refused; each then read (the second from the lock's memo or the store).
    expect(finds(from)).toBeGreaterThanOrEqual(1);
    expect((await stored(id))?.effects?.email).toEqual(running);
    expect((await stored(id))?.effects?.team_chat).toMatchObject({ state: 'done', attempts: 1 });
  });

  it("a stopping worker's closed gate: nothing marked, nothing sent, the job parks", async () => {
    const id = await newSubject();
    const subject = subjectOf(id, null);
    const gate = new EffectGate();
    gate.close();
    const sends = heldSends();
    sends.release();
    const from = commands.length;
    const attempt: Attempt = { lastAttempt: false, gate };
    void sends.run(subject, mail, attempt);
    void sends.run(subject, slack, attempt);
    // Parked with nothing under way: both came to the gate and stopped there.
    await gate.stopped();
    await eventually(async () => expect(subject.turns()).toBe(2), 15_000, 10);
    expect(gate.busy).toBe(false);
    expect(updates(from)).toBe(0);
    expect(sends.performed).toEqual({});
    expect(await stored(id)).toBeNull();
  });

  it('two jobs racing from the same stale version, each with both effects: each effect sent once', async () => {
    const id = await newSubject();
    const sends = heldSends();
    const jobs = [subjectOf(id, null), subjectOf(id, null)];
    const busy: unknown[] = [];
    const runs = jobs.flatMap((subject) => [
      sends.run(subject, mail).catch((err: unknown) => (busy.push(err), null)),
      sends.run(subject, slack).catch((err: unknown) => (busy.push(err), null)),
    ]);
    // One job marked both and sends them (held); the other's joint write was refused, and it
    // found both under the first one's live leases.
    await eventually(async () => expect(busy).toHaveLength(2), 20_000, 10);
    for (const err of busy) expect(err).toBeInstanceOf(EffectBusyError);
    expect(sends.performed).toEqual({ 'effects.email': 1, 'effects.team_chat': 1 });
    sends.release();
    expect((await Promise.all(runs)).filter((r) => r !== null)).toEqual([
      expect.objectContaining({ state: 'done', attempts: 1, result: { sent: 'effects.email#1' } }),
      expect.objectContaining({ state: 'done', attempts: 1, result: { sent: 'effects.team_chat#1' } }),
    ]);
    expect(sends.performed).toEqual({ 'effects.email': 1, 'effects.team_chat': 1 });
    expect((await stored(id))?.effects).toMatchObject({
      email: { state: 'done', attempts: 1 },
      team_chat: { state: 'done', attempts: 1 },
    });
  });
});
