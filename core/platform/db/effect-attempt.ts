import type { Collection, Document } from 'mongodb';
import { randomBytes } from 'node:crypto';
import { leaseRenewMs } from '../busy-until.js';
import type { EffectPass } from './effect-gate.js';
import type { HeldLock } from '../redis-mutex.js';
import { valueAt } from '../own.js';
import { replaceById } from './upsert.js';
import { writeKnownOutcome, writeRecords } from './effect-record-writes.js';
import {
  EffectSubjectMissingError,
  effectRecordAt,
  leaseIdOf,
  newEffectRecord,
  outcomeIdOf,
  settled,
  settledRecord,
  type Attempt,
  type Effect,
  type EffectLeaseDoc,
  type EffectOutcome,
  type EffectRecord,
  type EffectSubject,
  type EffectSubjectDoc,
} from './effect-records.js';

// One attempt at one effect of one subject, as runEffect (effect-recorder.ts, whose opening comment
// says how it works) goes through it: what its steps share (its lease token, the record as the job
// saw it, the gate's pass it holds, its lease's renewals) and the reads and writes of its record.

/** One attempt at `effect` of `subject`: its record's reads and writes, its lease and its pass. */
export class EffectAttempt<R> {
  readonly records: Collection<EffectSubjectDoc> | undefined;
  readonly lease: EffectSubject['lease'];
  readonly leaseId: string;
  /** This attempt's lease token: its `running` record, renewals and stored answer carry it. */
  readonly token = randomBytes(9).toString('base64url');
  /**
   * Where the answer is stored before the record: only for an effect that can be neither asked
   * about afterwards nor repeated harmlessly.
   */
  readonly outcomes: Collection<EffectLeaseDoc> | undefined;
  /** The document as the job saw it before its effects began (EffectSubject.seen), for the first look. */
  readonly seenDoc: EffectSubject['seen'];
  /** The record there, when it was seen (a new one when the document had none). */
  readonly seenRecord: EffectRecord<R> | undefined;
  /** The gate's pass this attempt holds, given back when it ends. */
  pass: EffectPass | undefined;
  private readonly memoKey: string | undefined;
  private readonly seenValue: unknown;
  private renewal: NodeJS.Timeout | undefined;
  private renewed = false;
  /** The last renewal's write: the lease document is deleted only after it. */
  private renewing: Promise<unknown> = Promise.resolve();

  constructor(
    readonly subject: EffectSubject,
    readonly effect: Effect<R>,
    readonly attempt: Attempt,
  ) {
    this.records = subject.records;
    this.lease = subject.lease;
    this.leaseId = leaseIdOf(subject, effect.path);
    this.outcomes =
      effect.reconcile === undefined && effect.repeatable !== true ? this.lease?.collection : undefined;
    // A records document is written by the recorder alone, under the subject's lock: while this
    // process holds the lock without a break, the document as last read or written here is the
    // document (see `exclusive`).
    this.memoKey = this.records === undefined ? undefined : `${this.records.collectionName}|${subject.id}`;
    this.seenDoc = this.lease === undefined ? undefined : subject.seen;
    this.seenValue = this.seenDoc === undefined ? undefined : valueAt(this.seenDoc.doc, effect.path);
    this.seenRecord =
      this.seenDoc === undefined
        ? undefined
        : ((this.seenValue as EffectRecord<R> | undefined) ?? newEffectRecord<R>());
  }

  memoOf(held: HeldLock | undefined): Map<string, unknown> | undefined {
    return this.memoKey === undefined ? undefined : held?.memo;
  }

  /** The record as stored (or as the held lock's memo keeps it). */
  async read(held?: HeldLock): Promise<EffectRecord<R>> {
    const memo = this.memoOf(held);
    const { path } = this.effect;
    if (memo?.has(this.memoKey!)) return effectRecordAt<R>(memo.get(this.memoKey!) as Document | null, path);
    const doc = await (this.records ?? this.subject.collection).findOne(
      { _id: this.subject.id },
      // Kept for the next holder: the whole records document (the records of a call, a few KB).
      memo === undefined ? { projection: { [path]: 1 } } : {},
    );
    // A subject's records document is made by its first mark: none yet, nothing recorded.
    if (doc === null && this.records === undefined) throw new EffectSubjectMissingError(this.subject.id);
    memo?.set(this.memoKey!, doc);
    return effectRecordAt<R>(doc, path);
  }

  /** Writes the record (and `alsoSet` on the subject); the caller holds the subject's lock. */
  async store(
    record: EffectRecord<R>,
    alsoSet: Record<string, unknown> = {},
    held?: HeldLock,
  ): Promise<void> {
    const { subject, records } = this;
    const { path } = this.effect;
    if (records === undefined) {
      await subject.collection.updateOne({ _id: subject.id }, { $set: { ...alsoSet, [path]: record } });
      return;
    }
    if (Object.keys(alsoSet).length > 0) {
      await subject.collection.updateOne({ _id: subject.id }, { $set: alsoSet });
    }
    await writeRecords(subject, records, { [path]: record }, this.memoOf(held));
  }

  /** store, with the subject's lock taken for it. */
  write(record: EffectRecord<R>, alsoSet: Record<string, unknown> = {}): Promise<void> {
    return this.subject.exclusive((held) => this.store(record, alsoSet, held));
  }

  /** `from` settled with `outcome` and written, retried through a database outage (the outcome is known). */
  async settle(
    from: EffectRecord<R>,
    outcome: EffectOutcome<R>,
    finishedAt = new Date(),
  ): Promise<EffectRecord<R>> {
    const record = settledRecord(from, outcome, finishedAt);
    await writeKnownOutcome(() => this.write(record, outcome.alsoSet));
    return record;
  }

  /** The answer the attempt that marked `record` stored, when it did. */
  async storedOutcome(record: EffectRecord<R>): Promise<EffectLeaseDoc | null> {
    if (this.outcomes === undefined || record.state !== 'running' || !record.lease_token) return null;
    return this.outcomes.findOne({
      _id: outcomeIdOf(this.leaseId, record.lease_token),
      outcome: { $exists: true },
    });
  }

  /**
   * Stores this attempt's answer before its record (only an effect with `outcomes`): when it was
   * stored; null when it was not (MongoDB away: the record's write retries through the outage).
   */
  storeOutcome(outcome: EffectOutcome<R>, answeredAt: Date): Promise<number | null> {
    if (this.outcomes === undefined) return Promise.resolve(null);
    return this.outcomes
      .insertOne({
        _id: outcomeIdOf(this.leaseId, this.token),
        token: this.token,
        until: answeredAt,
        outcome: {
          state: outcome.state,
          result: outcome.result,
          ...(outcome.alsoSet === undefined ? {} : { alsoSet: outcome.alsoSet }),
        },
      })
      .then(
        () => Date.now(),
        () => null,
      );
  }

  /** Lets go of the answer stored by the attempt holding `token` (its record holds it now). */
  dropOutcome(token: string): Promise<unknown> | undefined {
    return this.outcomes?.deleteOne({ _id: outcomeIdOf(this.leaseId, token) }).catch(() => undefined);
  }

  /** Tells the observer that an answer stored by the attempt that marked it was recorded by this one. */
  recovered(stored: EffectLeaseDoc, attempt: number): void {
    this.subject.observe?.({
      kind: 'recovered',
      subject: this.subject.id,
      path: this.effect.path,
      attempt,
      token: stored.token,
      marked_at: null,
      sent_at: null,
      answered_at: new Date(stored.until).getTime(),
      outcome_stored_at: null,
      recorded_at: Date.now(),
    });
  }

  /** `current` as this attempt's `running` record. */
  runningFrom(current: EffectRecord<R>): EffectRecord<R> {
    const { lease } = this;
    const leaseMs = lease === undefined ? 0 : lease.ms + (this.effect.boundMs ?? 0);
    return {
      ...current,
      state: 'running',
      attempts: current.attempts + 1,
      started_at: new Date(),
      finished_at: null,
      ...(lease === undefined
        ? {}
        : { lease_token: this.token, lease_until: new Date(Date.now() + leaseMs) }),
    };
  }

  /** The mark: `current`, just read under the subject's lock, becomes this attempt's `running` record. */
  async mark(current: EffectRecord<R>, held: HeldLock | undefined): Promise<EffectRecord<R>> {
    const next = this.runningFrom(current);
    await this.store(next, {}, held);
    return next;
  }

  /** The filter that holds while the record is as seen: its state and attempts, or still none. */
  unchangedAsSeen(seen: EffectRecord<R>): Document {
    const { path } = this.effect;
    return this.seenValue === undefined
      ? { [path]: { $exists: false } }
      : { [`${path}.state`]: seen.state, [`${path}.attempts`]: seen.attempts };
  }

  /**
   * The mark from the record as seen on the subject itself (a records document's marks are
   * gathered), the caller holding the lock: written only if the record is still as seen (its state
   * and attempts; or still none); null when another attempt wrote it since.
   */
  async markAsSeen(seen: EffectRecord<R>): Promise<EffectRecord<R> | null> {
    const next = this.runningFrom(seen);
    // The subject exists (none: nothing matches, and the read says so).
    const result = await this.subject.collection.updateOne(
      { _id: this.subject.id, ...this.unchangedAsSeen(seen) },
      { $set: { [this.effect.path]: next } },
    );
    return result.matchedCount > 0 ? next : null;
  }

  /**
   * A `running` record left by an attempt that held a lease, or of an effect that can be asked
   * about, is looked into without the lock (the answer its attempt stored, its lease, the outside
   * world); one with neither is repeated.
   */
  mustLookFirst(record: EffectRecord<R>): boolean {
    return record.state === 'running' && (Boolean(record.lease_token) || this.effect.reconcile !== undefined);
  }

  /**
   * A repeatable effect is not marked: two attempts at once do nothing twice (its own claim, or its
   * steps' records), so no `running` record keeps others out, and its record is written once, at
   * the settle. One a past attempt left `running` goes the old way.
   */
  goesUnmarked(record: EffectRecord<R>): boolean {
    return this.effect.repeatable === true && !settled(record) && record.state !== 'running';
  }

  /**
   * When the lease of a `running` record ends (its mark's end, or a later renewal by the same
   * attempt), with the clock margin; null when it has ended or the record holds none.
   */
  async liveLeaseEnd(record: EffectRecord<unknown>): Promise<number | null> {
    const { lease } = this;
    if (lease === undefined || record.state !== 'running' || !record.lease_token || !record.lease_until) {
      return null;
    }
    let until = new Date(record.lease_until).getTime();
    const renewed = await lease.collection.findOne({ _id: this.leaseId });
    if (renewed !== null && renewed.token === record.lease_token) {
      until = Math.max(until, new Date(renewed.until).getTime());
    }
    const end = until + lease.clockMarginMs;
    return end > Date.now() ? end : null;
  }

  /**
   * Renews this attempt's lease while its effect and outcome write run; a failed renewal (MongoDB
   * away) is not the effect's failure.
   */
  renewLease(): void {
    const { lease } = this;
    if (lease === undefined) return;
    this.renewal = setInterval(() => {
      this.renewed = true;
      this.renewing = replaceById(lease.collection, this.leaseId, {
        token: this.token,
        until: new Date(Date.now() + lease.ms),
      }).catch(() => undefined);
    }, leaseRenewMs(lease.ms));
  }

  /**
   * The attempt's end, however it ended: the renewals stop, the gate's pass is given back, and the
   * lease's renewal document, if one was written, goes (the record says the lease ended; a stopping
   * worker does not wait for this: a renewal left behind names a token no record holds any more).
   * Most attempts end before their first renewal: nothing to delete.
   */
  async end(): Promise<void> {
    clearInterval(this.renewal);
    this.pass?.();
    if (this.renewed) {
      // After the last renewal's write: one still under way would put the document back.
      await this.renewing;
      await this.lease?.collection.deleteOne({ _id: this.leaseId, token: this.token }).catch(() => undefined);
    }
  }
}
