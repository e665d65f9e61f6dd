import type { Collection, Document } from 'mongodb';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { leaseRenewMs } from '../busy-until.js';
import type { EffectGate, EffectPass } from './effect-gate.js';
import type { HeldLock } from '../redis-mutex.js';
import { storableText } from '../text.js';
import { valueAt } from '../own.js';
import { isDuplicateKey } from './claim.js';
import { replaceById, updateById } from './upsert.js';
import {
  EffectBoundError,
  EffectBusyError,
  EffectRaceError,
  EffectSubjectMissingError,
  effectRecordAt,
  leaseIdOf,
  newEffectRecord,
  outcomeIdOf,
  settled,
  withValueAt,
  type Attempt,
  type Effect,
  type EffectLeaseDoc,
  type EffectOutcome,
  type EffectRecord,
  type EffectState,
  type EffectSubject,
  type EffectSubjectDoc,
} from './effect-records.js';

// The effect recorder: every effect on the outside world (a dial, a CRM write, an email, a
// chat message, a reminder) runs through runEffect, which keeps its record on the subject
// document (a call, a chat, a booking) as pending → running → done | failed | skipped, with
// attempts, the last error and timestamps. A retried job skips an effect already done; an
// attempt that may have reached the outside world without its outcome being recorded (a crash,
// a timeout) leaves `running` behind, and the next attempt asks the outside world first
// (`reconcile`) when the effect can be asked, else repeats it (at least once).
//
// Records are written with the subject's lock held (`exclusive`): FerretDB rewrites whole
// documents on update, so writers of one document take turns (withRecordLock, core/platform/redis-mutex.ts).
//
// One read, then the mark. A subject with a lease is read first under its lock: a record new,
// pending or failed is marked there and then, from the version just read (one read, one write);
// one done or skipped is returned as it is, marked never. Only a record found `running` by an
// attempt that held a lease, or of an effect that can be asked about, is looked into without the
// lock (the answer stored, the lease, `reconcile` — the outside world is never asked with the
// lock held), and then read again under the lock for the mark, which moves it on only from the
// version first read (else EffectRaceError). An attempt racing a new record's mark finds it
// `running` under the winner's live lease (EffectBusyError) or done. A subject without a lease
// is read first without the lock, then again under it for the mark: a racer that read the same
// version loses the race rather than taking the winner's `running` for a dead attempt.
//
// Where the records live. By default on the subject document, at the effect's path. A subject
// that is large or written often besides (a call carries its transcript, up to 200k characters)
// keeps them in a records document of its own instead (`records`: a collection whose document
// with the subject's `_id` holds the records at the same paths): every mark and settle then
// rewrites that small document, never the subject. The subject is written only for an outcome's
// `alsoSet` (before its record, so a settled record implies its fields). Nothing else changes:
// the same lock, lease, answer-first insert and reconcile, whichever the placement.
//
// The lease. `running` alone cannot tell an attempt still under way from one that died, and the
// BullMQ lock that keeps a job's attempts apart is in Redis: a worker that loses Redis for a
// while loses its job's lock, and when Redis is back another worker takes the job as stalled
// while the first is still sending, or still retrying a known outcome into its record
// (writeKnownOutcome). So the mark stores a lease on the record (`lease_token`, `lease_until`),
// renewed every third of its length (EFFECT_LEASE_MS) while `perform` and the outcome write run.
// The renewals go to a document of their own (`effect_leases`, `_id` = the subject's collection,
// id and the effect's path; only the holder writes it), written without the subject's lock: the
// lock is in Redis, and the lease must be renewed precisely while Redis is away. An attempt that
// finds the effect `running` under a live lease neither reconciles nor repeats it: it throws a
// BusyUntilError and its job sleeps until the lease ends, spending no attempt (workers/runner.ts).
// A lease that ran out means its holder died (or lost MongoDB too): the next attempt reconciles
// or repeats, as before. An attempt that ends (done, skipped, failed, or an error) ends its lease.
// Clocks: a lease is written with the holder's clock and judged with the reader's, so it counts
// as live for a margin past its end (EFFECT_LEASE_CLOCK_MARGIN_MS, 5 s); workers' clocks further apart than that
// (NTP keeps them within milliseconds) would shorten it. A subject without `lease` (a booking
// made within one request) has none: a `running` record is reconciled or repeated at once.
//
// A request in flight holds the lease whatever becomes of the renewals. An effect that declares
// `boundMs` (the longest its request may be out: a mail's whole SMTP exchange, a Slack post) is
// marked with a lease of `boundMs` + EFFECT_LEASE_MS, and its `perform` is aborted at `boundMs`
// (the signal it gets): so a live attempt's lease cannot run out, nor another attempt begin,
// while its request is out — not through a slow MongoDB that delays the renewals, nor a worker
// busy under load. What it costs: a worker that dies mid-send is taken over `boundMs` later.
//
// The answer, recorded first. An effect that cannot be asked about afterwards (no `reconcile`:
// a mail, a Slack message) has its outcome inserted, the moment `perform` returns, as a document
// of its own next to the lease renewals (`_id` = the lease's id and the attempt's token; only
// that attempt writes it): one insert, no lock to wait for, nothing else between the answer read
// and the outcome stored. The record on the subject is then written under the lock as before. An
// attempt that finds the effect `running` looks for the outcome of the attempt that marked it
// first, and records it instead of sending again. What remains: a worker that dies after the
// outside world accepted the request and before that insert landed (for a mail: from the end of
// DATA, through the server's 250 on the wire, to the insert) — nothing can ask afterwards.
// An effect that is `repeatable` (doing it again does nothing twice: a lead claimed on an id of
// its own, a CRM write whose steps are recorded on their own) stores no answer first and is not
// marked: its record is read once under the lock and written once, at the settle (a failure
// writes it only if no other attempt settled it meanwhile). Attempts that overlap both perform
// it, which is what `repeatable` allows; a worker that dies mid-way leaves it as it was, and the
// next attempt repeats it. One left `running` by an attempt that did mark it is looked into as
// above (a live lease waits), then repeated.
//
// Settles carried. A subject with a `carry` (the analysis job's, for the effects it runs together)
// does not write the settle of an effect whose loss costs nothing but a look or a repeat — one
// that can be asked about (`reconcile`) or is `repeatable` — on its own: it waits in the carry and
// goes with the next write of the records document (another effect's mark or settle), or with
// the job's `flushCarried` at its end, or, when no write comes for `lingerMs`, on its own then (so
// that get-call does not show an effect done long ago as pending while a slow one goes on).
// A process that dies first leaves the effect as the write
// before it left it (`running` under its lease, or unsettled): the next attempt reconciles or
// repeats it, which is what such an effect is for. An effect whose answer is stored first (a
// mail, a Slack message) is carried too once that answer is stored: its answer document is let
// go only after the write that carried its settle, so a process that dies first leaves the record
// `running` beside its stored answer, and the next attempt records that answer and sends nothing
// (as for a process that died between the answer and the record). One whose answer could not be
// stored (MongoDB away) writes its settle at once, retried through the outage.
//
// From what was seen. A job that read the document holding the records before its effects began
// (`seen`: the analysis job reads the call's effects document for call.analyzed; the place-call job
// reads the call, which holds its dial) takes each effect's first look from that version, not
// from a read under the lock. A record settled there is final: returned, no lock taken. One of a
// repeatable effect not begun goes unmarked, no lock taken (two attempts at once are what
// `repeatable` allows). One new, pending or failed is marked under the lock by a write whose
// filter is the record as seen (its state and attempts, or its absence): under the lock no other
// writer is between the filter and the write, so the filter tells only whether another attempt
// wrote the record since it was seen; then, and for a record seen `running`, it is read under
// the lock and decided as above.
//
// Marks gathered. Effects given the same version seen of a records document (one `seen`: the
// analysis job's mail, Slack and the CRM's steps) each register their mark before they ask for the
// lock, and the first of them to hold it writes every mark registered by then in one write, its
// filter every record as seen; the others, in their turns, find theirs written and write nothing
// (an effect alone is one such write). Each mark
// passes its own attempt's gate as the write is made (one whose gate is closed is left to its
// owner, which parks). Refused (a record written since it was seen), every mark of that write is
// read under the lock by its owner and decided as above; a write whose fate is unknown (MongoDB
// away) leaves the others to write their own, from the same version (one that landed is then
// found `running` under this attempt's lease, and waited for).

/** A mark from the version seen, waiting for a holder of the lock to write it ("Marks gathered"). */
interface GatheredMark {
  path: string;
  /** The attempt's `running` record. */
  next: EffectRecord<unknown>;
  /** The filter that holds while the record is as seen. */
  unchanged: Document;
  gate: EffectGate | undefined;
  /** Decided by a holder's write: written (with the pass it entered the gate with), or refused. */
  decided?: MarkDecision;
}

type MarkDecision = { written: true; pass: EffectPass | undefined } | { written: false };

/** The marks not yet written, by the version seen they were made from (EffectSubject.seen). */
const marksWaiting = new WeakMap<object, Set<GatheredMark>>();

function marksWaitingOn(seen: object): Set<GatheredMark> {
  let waiting = marksWaiting.get(seen);
  if (waiting === undefined) marksWaiting.set(seen, (waiting = new Set()));
  return waiting;
}

/** Writes what the carry holds `lingerMs` from now unless a write takes it first; its failure is left to the next write. */
function lingerThenFlush(subject: EffectSubject): void {
  const carry = subject.carry!;
  if (carry.timer !== undefined) return;
  carry.timer = setTimeout(() => {
    carry.timer = undefined;
    const records = subject.records!;
    const writing = subject
      .exclusive(async (held) => {
        if (carry.pending.size > 0) await writeRecords(subject, records, {}, held?.memo);
      })
      .catch(() => undefined)
      .finally(() => {
        if (carry.writing === writing) carry.writing = undefined;
      });
    carry.writing = writing;
  }, carry.lingerMs);
  carry.timer.unref();
}

/** How long an outcome that is known (the effect happened) is retried into its record. */
export const KNOWN_OUTCOME_RETRY_MS = 60_000;

/**
 * Records an outcome this process knows, through a database outage of up to
 * KNOWN_OUTCOME_RETRY_MS: given up at once, the record would stay `running` and the next attempt
 * would repeat an effect that cannot be asked about (a mail, a Slack message) although it is
 * known to have happened. Only a process that dies meanwhile leaves it unknown.
 */
async function writeKnownOutcome(write: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + KNOWN_OUTCOME_RETRY_MS;
  for (let pause = 250; ; pause = Math.min(pause * 2, 5000)) {
    try {
      await write();
      return;
    } catch (err) {
      if (Date.now() + pause > until) throw err;
      await sleep(pause);
    }
  }
}

/** Runs `perform` unless the effect is already done or skipped, recording each step on the subject. */
export async function runEffect<R>(
  subject: EffectSubject,
  effect: Effect<R>,
  attempt: Attempt,
  perform: (signal: AbortSignal) => Promise<EffectOutcome<R>>,
): Promise<EffectRecord<R>> {
  const records = subject.records;
  // A records document is written by the recorder alone, under the subject's lock: while this
  // process holds the lock without a break, the document as last read or written here is the
  // document (see `exclusive`).
  const memoKey = records === undefined ? undefined : `${records.collectionName}|${subject.id}`;
  const memoOf = (held: HeldLock | undefined) => (memoKey === undefined ? undefined : held?.memo);
  const read = async (held?: HeldLock): Promise<EffectRecord<R>> => {
    const memo = memoOf(held);
    if (memo?.has(memoKey!)) return effectRecordAt<R>(memo.get(memoKey!) as Document | null, effect.path);
    const doc = await (records ?? subject.collection).findOne(
      { _id: subject.id },
      // Kept for the next holder: the whole records document (the records of a call, a few KB).
      memo === undefined ? { projection: { [effect.path]: 1 } } : {},
    );
    // A subject's records document is made by its first mark: none yet, nothing recorded.
    if (doc === null && records === undefined) throw new EffectSubjectMissingError(subject.id);
    memo?.set(memoKey!, doc);
    return effectRecordAt<R>(doc, effect.path);
  };
  /** Writes the record (and `alsoSet` on the subject); the caller holds the subject's lock. */
  const store = async (
    record: EffectRecord<R>,
    alsoSet: Record<string, unknown> = {},
    held?: HeldLock,
  ): Promise<void> => {
    if (records === undefined) {
      await subject.collection.updateOne(
        { _id: subject.id },
        { $set: { ...alsoSet, [effect.path]: record } },
      );
      return;
    }
    if (Object.keys(alsoSet).length > 0) {
      await subject.collection.updateOne({ _id: subject.id }, { $set: alsoSet });
    }
    await writeRecords(subject, records, { [effect.path]: record }, memoOf(held));
  };
  const write = (record: EffectRecord<R>, alsoSet: Record<string, unknown> = {}) =>
    subject.exclusive((held) => store(record, alsoSet, held));
  const settle = async (
    from: EffectRecord<R>,
    outcome: EffectOutcome<R>,
    finishedAt = new Date(),
  ): Promise<EffectRecord<R>> => {
    const record = settledRecord(from, outcome, finishedAt);
    await writeKnownOutcome(() => write(record, outcome.alsoSet));
    return record;
  };
  const lease = subject.lease;
  const leaseId = leaseIdOf(subject, effect.path);
  // Only an effect that can be neither asked about afterwards nor repeated harmlessly stores its
  // outcome before its record.
  const outcomes =
    effect.reconcile === undefined && effect.repeatable !== true ? lease?.collection : undefined;
  const storedOutcome = async (record: EffectRecord<R>): Promise<EffectLeaseDoc | null> =>
    outcomes === undefined || record.state !== 'running' || !record.lease_token
      ? null
      : outcomes.findOne({ _id: outcomeIdOf(leaseId, record.lease_token), outcome: { $exists: true } });
  const dropOutcome = (token: string) =>
    outcomes?.deleteOne({ _id: outcomeIdOf(leaseId, token) }).catch(() => undefined);
  const recovered = (stored: EffectLeaseDoc, attempt: number) =>
    subject.observe?.({
      kind: 'recovered',
      subject: subject.id,
      path: effect.path,
      attempt,
      token: stored.token,
      marked_at: null,
      sent_at: null,
      answered_at: new Date(stored.until).getTime(),
      outcome_stored_at: null,
      recorded_at: Date.now(),
    });

  const token = randomBytes(9).toString('base64url');
  /** `current` as this attempt's `running` record. */
  const runningFrom = (current: EffectRecord<R>): EffectRecord<R> => {
    const leaseMs = lease === undefined ? 0 : lease.ms + (effect.boundMs ?? 0);
    return {
      ...current,
      state: 'running',
      attempts: current.attempts + 1,
      started_at: new Date(),
      finished_at: null,
      ...(lease === undefined ? {} : { lease_token: token, lease_until: new Date(Date.now() + leaseMs) }),
    };
  };
  /** The mark: `current`, just read under the subject's lock, becomes this attempt's `running` record. */
  const mark = async (current: EffectRecord<R>, held: HeldLock | undefined): Promise<EffectRecord<R>> => {
    const next = runningFrom(current);
    await store(next, {}, held);
    return next;
  };
  // The record as the job saw it before its effects began (EffectSubject.seen), for the first look.
  const seenDoc = lease === undefined ? undefined : subject.seen;
  const seenValue = seenDoc === undefined ? undefined : valueAt(seenDoc.doc, effect.path);
  const seenRecord =
    seenDoc === undefined ? undefined : ((seenValue as EffectRecord<R> | undefined) ?? newEffectRecord<R>());
  /** The filter that holds while the record is as seen: its state and attempts, or still none. */
  const unchangedAsSeen = (seen: EffectRecord<R>): Document =>
    seenValue === undefined
      ? { [effect.path]: { $exists: false } }
      : { [`${effect.path}.state`]: seen.state, [`${effect.path}.attempts`]: seen.attempts };
  /**
   * The mark from the record as seen on the subject itself (a records document's marks are
   * gathered), the caller holding the lock: written only if the record is still as seen (its state
   * and attempts; or still none); null when another attempt wrote it since.
   */
  const markAsSeen = async (seen: EffectRecord<R>): Promise<EffectRecord<R> | null> => {
    const next = runningFrom(seen);
    // The subject exists (none: nothing matches, and the read says so).
    const result = await subject.collection.updateOne(
      { _id: subject.id, ...unchangedAsSeen(seen) },
      { $set: { [effect.path]: next } },
    );
    return result.matchedCount > 0 ? next : null;
  };
  // A `running` record left by an attempt that held a lease, or of an effect that can be asked
  // about, is looked into without the lock (the answer its attempt stored, its lease, the outside
  // world); one with neither is repeated.
  const mustLookFirst = (record: EffectRecord<R>): boolean =>
    record.state === 'running' && (Boolean(record.lease_token) || effect.reconcile !== undefined);
  // A repeatable effect is not marked: two attempts at once do nothing twice (its own claim, or its
  // steps' records), so no `running` record keeps others out, and its record is written once, at
  // the settle. One a past attempt left `running` goes the old way.
  const goesUnmarked = (record: EffectRecord<R>): boolean =>
    effect.repeatable === true && !settled(record) && record.state !== 'running';

  let pass: EffectPass | undefined;
  let renewal: NodeJS.Timeout | undefined;
  let renewed = false;
  /** The last renewal's write: the lease document is deleted only after it. */
  let renewing: Promise<unknown> = Promise.resolve();
  try {
    // The first look. With a lease, under the lock: a record new, pending or failed is marked
    // there and then, from the version just read (one read; an attempt racing it finds it
    // `running` under a live lease, or done). Without a lease, nothing tells a racing attempt
    // from a dead one: the record is read first, and the mark below moves it on only from the
    // version read.
    type FirstLook =
      | { seen: EffectRecord<R> }
      | { marked: EffectRecord<R>; pass: EffectPass | undefined }
      | { unmarked: EffectRecord<R> };
    // From the version the job saw (EffectSubject.seen): settled is final, and a repeatable
    // effect not begun goes unmarked, neither with the lock; one to mark is marked if unchanged.
    const fromSeen: FirstLook | undefined =
      seenRecord === undefined
        ? undefined
        : settled(seenRecord)
          ? { seen: seenRecord }
          : goesUnmarked(seenRecord)
            ? { unmarked: seenRecord }
            : undefined;
    // To mark in the records document from the version seen: registered before the lock is asked
    // for, so that the first holder writes it with the others' from that version ("Marks gathered").
    const gathered: GatheredMark | undefined =
      fromSeen === undefined &&
      records !== undefined &&
      seenRecord !== undefined &&
      seenRecord.state !== 'running'
        ? {
            path: effect.path,
            next: runningFrom(seenRecord),
            unchanged: unchangedAsSeen(seenRecord),
            gate: attempt.gate,
          }
        : undefined;
    if (gathered !== undefined) marksWaitingOn(seenDoc!).add(gathered);
    const first: FirstLook =
      fromSeen !== undefined
        ? fromSeen
        : lease === undefined
          ? { seen: await read() }
          : await subject
              .exclusive(async (held): Promise<FirstLook> => {
                /** The look at `current`; null when it was seen and has been written since. */
                const look = async (current: EffectRecord<R>, asSeen: boolean): Promise<FirstLook | null> => {
                  if (settled(current) || mustLookFirst(current)) return { seen: current };
                  if (goesUnmarked(current)) return { unmarked: current };
                  // A stopping worker's closed gate: the lock is let go of, and the job parked below.
                  const entered = attempt.gate?.enterNow();
                  if (entered === null) return { seen: current };
                  try {
                    const marked = asSeen ? await markAsSeen(current) : await mark(current, held);
                    if (marked === null) entered?.();
                    return marked === null ? null : { marked, pass: entered };
                  } catch (err) {
                    entered?.();
                    throw err;
                  }
                };
                if (gathered !== undefined) {
                  // Written with others' by an earlier holder, or now by this one with those waiting.
                  const decided =
                    gathered.decided ??
                    (await writeGathered(subject, records!, gathered, seenDoc!, memoOf(held)));
                  // This attempt's gate is closed: nothing written, the job parks below.
                  if (decided === null) {
                    marksWaitingOn(seenDoc!).delete(gathered);
                    return { seen: seenRecord! };
                  }
                  if (decided.written)
                    return { marked: gathered.next as EffectRecord<R>, pass: decided.pass };
                  return (await look(await read(held), false))!;
                }
                // On the subject itself, from the version seen unless it was `running`; written since it
                // was seen: read, and looked at.
                const asSeen = seenRecord !== undefined && seenRecord.state !== 'running';
                return (
                  (asSeen ? await look(seenRecord, true) : null) ?? (await look(await read(held), false))!
                );
              })
              .catch((err: unknown) => {
                // Without its turn (the lock busy too long), or its write failed: not waiting any
                // more; one written for it by another holder is left `running` under its lease (the
                // next attempt waits for that lease, then repeats it: nothing was sent).
                if (gathered !== undefined) {
                  marksWaitingOn(seenDoc!).delete(gathered);
                  if (gathered.decided?.written === true) gathered.decided.pass?.();
                }
                throw err;
              });
    let marked: EffectRecord<R>;
    // Whether this attempt's `running` record was written (not for a repeatable effect's).
    let wasMarked = true;
    if ('marked' in first) {
      marked = first.marked;
      pass = first.pass;
    } else if ('unmarked' in first || goesUnmarked(first.seen)) {
      // Neither settled nor `running` (goesUnmarked): nothing to return or look into first.
      const current = 'unmarked' in first ? first.unmarked : first.seen;
      // A stopping worker lets it begin no more (its job is parked and handed back).
      pass = await attempt.gate?.enter();
      wasMarked = false;
      marked = { ...current, attempts: current.attempts + 1, started_at: new Date(), finished_at: null };
    } else {
      const seen = first.seen;
      if (settled(seen)) return seen;
      // The attempt that marked it got its answer and died before writing the record: recorded now.
      const known = await storedOutcome(seen);
      if (known !== null) {
        const record = await settle(seen, known.outcome as EffectOutcome<R>, known.until);
        recovered(known, seen.attempts);
        await dropOutcome(known.token);
        return record;
      }
      if (lease !== undefined) {
        const busyUntil = await liveLeaseEnd(lease, leaseId, seen);
        if (busyUntil !== null) throw new EffectBusyError(effect.path, subject.id, busyUntil);
      }
      if (seen.state === 'running' && effect.reconcile !== undefined) {
        const found = await effect.reconcile(seen);
        if (found !== null) return await settle(seen, found);
      }

      // A stopping worker lets no effect begin from here (its job is parked and handed back); one
      // that has begun is counted until its outcome is recorded (effect-gate.ts).
      pass = await attempt.gate?.enter();
      // The mark: only one attempt can move the record on from the version it read.
      marked = await subject.exclusive(async (held) => {
        const current = await read(held);
        if (settled(current)) return current;
        if (current.attempts !== seen.attempts) throw new EffectRaceError(effect.path, subject.id);
        const late = await storedOutcome(current);
        if (late !== null) {
          const record = settledRecord(current, late.outcome as EffectOutcome<R>, late.until);
          await store(record, late.outcome!.alsoSet, held);
          recovered(late, current.attempts);
          void dropOutcome(late.token);
          return record;
        }
        return mark(current, held);
      });
      if (settled(marked)) return marked;
    }
    const markedAt = Date.now();
    if (lease !== undefined && wasMarked) {
      // Renewed while the effect and its outcome write run; a failed renewal (MongoDB away) is
      // not the effect's failure.
      renewal = setInterval(() => {
        renewed = true;
        renewing = replaceById(lease.collection, leaseId, {
          token,
          until: new Date(Date.now() + lease.ms),
        }).catch(() => undefined);
      }, leaseRenewMs(lease.ms));
    }

    let outcome: EffectOutcome<R>;
    const sentAt = Date.now();
    const abort = new AbortController();
    const bound =
      effect.boundMs === undefined
        ? undefined
        : setTimeout(
            () => abort.abort(new EffectBoundError(effect.path, subject.id, effect.boundMs!)),
            effect.boundMs,
          );
    try {
      outcome = await perform(abort.signal);
    } catch (err) {
      clearTimeout(bound);
      const final = attempt.lastAttempt || (effect.isFinal?.(err) ?? false);
      const happened = effect.mayHaveHappened?.(err) ?? true;
      const state: EffectState = final ? 'failed' : happened ? 'running' : 'pending';
      const message = err instanceof Error ? err.message : String(err);
      const failed: EffectRecord<R> = {
        ...marked,
        // Unmarked, nothing is left `running`: the next attempt repeats it, which is harmless.
        state: wasMarked ? state : final ? 'failed' : 'pending',
        // As it came, but for NUL, which the store refuses (the failure would go unrecorded).
        last_error: storableText(message.slice(0, 500)),
        ...(final ? { finished_at: new Date() } : {}),
        ...LEASE_ENDED,
      };
      await (
        wasMarked
          ? write(failed)
          : // No lease kept other attempts out: one may have settled it meanwhile, which stands.
            subject.exclusive(async (held) => {
              if (!settled(await read(held))) await store(failed, {}, held);
            })
      ).catch(() => {
        // Left `running` (or unwritten): the next attempt reconciles or repeats, which is the safe side.
      });
      throw err;
    }
    clearTimeout(bound);
    // Nothing between the answer and this insert: it is what a worker dying now would lose.
    const answeredAt = new Date();
    let outcomeStoredAt: number | null = null;
    if (outcomes !== undefined) {
      await outcomes
        .insertOne({
          _id: outcomeIdOf(leaseId, token),
          token,
          until: answeredAt,
          outcome: {
            state: outcome.state,
            result: outcome.result,
            ...(outcome.alsoSet === undefined ? {} : { alsoSet: outcome.alsoSet }),
          },
        })
        .then(
          () => (outcomeStoredAt = Date.now()),
          // MongoDB away: the record's write below retries through the outage.
          () => undefined,
        );
    }
    const carry = records === undefined ? undefined : subject.carry;
    // Carried: a settle whose loss costs a look or a repeat, or one whose answer is stored (the
    // next attempt records that answer); never one with fields of the subject to set.
    const carried =
      carry !== undefined &&
      (effect.reconcile !== undefined || effect.repeatable === true || outcomeStoredAt !== null) &&
      Object.keys(outcome.alsoSet ?? {}).length === 0;
    let record: EffectRecord<R>;
    if (carried) {
      record = settledRecord(marked, outcome, answeredAt);
      // The stored answer stays until the record that holds it is written.
      carry.pending.set(effect.path, {
        record,
        ...(outcomeStoredAt === null ? {} : { written: () => void dropOutcome(token) }),
      });
      lingerThenFlush(subject);
    } else {
      record = await settle(marked, outcome, answeredAt);
    }
    subject.observe?.({
      kind: 'recorded',
      subject: subject.id,
      path: effect.path,
      attempt: marked.attempts,
      token,
      marked_at: wasMarked ? markedAt : null,
      sent_at: sentAt,
      answered_at: answeredAt.getTime(),
      outcome_stored_at: outcomeStoredAt,
      recorded_at: Date.now(),
    });
    // The record holds it now (a carried one: once written, see writeRecords); a document left
    // behind (the delete lost) names a token no record holds.
    if (outcomeStoredAt !== null && !carried) void dropOutcome(token);
    return record;
  } finally {
    clearInterval(renewal);
    pass?.();
    // The record says the lease ended; its renewal document, if one was written, goes too (a
    // stopping worker does not wait for this: a renewal left behind names a token no record
    // holds any more). Most attempts end before their first renewal: nothing to delete.
    if (renewed) {
      // After the last renewal's write: one still under way would put the document back.
      await renewing;
      await lease?.collection.deleteOne({ _id: leaseId, token }).catch(() => undefined);
    }
  }
}

const LEASE_ENDED = { lease_token: null, lease_until: null } as const;

/**
 * Writes the marks gathered by now, `mine` among them, in one write of the records document whose
 * filter is every record as seen; the caller holds the lock. Each mark passes its attempt's gate
 * first (one closed is left to its owner). Null: `mine`'s gate is closed, nothing written. A
 * write that fails leaves the others waiting, to write their own in their turns.
 */
async function writeGathered(
  subject: EffectSubject,
  records: Collection<EffectSubjectDoc>,
  mine: GatheredMark,
  seen: NonNullable<EffectSubject['seen']>,
  memo: Map<string, unknown> | undefined,
): Promise<MarkDecision | null> {
  const waiting = marksWaitingOn(seen);
  const entered = mine.gate?.enterNow();
  if (entered === null) return null;
  const going: Array<{ mark: GatheredMark; pass: EffectPass | undefined }> = [{ mark: mine, pass: entered }];
  for (const mark of waiting) {
    if (mark === mine) continue;
    const pass = mark.gate?.enterNow();
    if (pass !== null) going.push({ mark, pass });
  }
  let written: boolean;
  try {
    written = await writeRecords(
      subject,
      records,
      Object.fromEntries(going.map(({ mark }) => [mark.path, mark.next])),
      memo,
      // No records document was seen: the write makes it, unless another write made it since.
      {
        unchanged: Object.assign({}, ...going.map(({ mark }) => mark.unchanged)) as Document,
        makes: seen.doc === null,
      },
    );
  } catch (err) {
    for (const { pass } of going) pass?.();
    throw err;
  }
  for (const { mark, pass } of going) {
    waiting.delete(mark);
    if (!written) pass?.();
    mark.decided = written ? { written: true, pass } : { written: false };
  }
  return mine.decided!;
}

/**
 * Writes `sets` (records by path) to the subject's records document, with the settles its carry
 * holds, in one upsert; the caller holds the subject's lock. `memo`: the held lock's, kept true to
 * what was written (dropped when the write's fate is unknown).
 */
async function writeRecords(
  subject: EffectSubject,
  records: Collection<EffectSubjectDoc>,
  sets: Record<string, EffectRecord<unknown>>,
  memo: Map<string, unknown> | undefined,
  only?: { unchanged: Document; makes: boolean },
): Promise<boolean> {
  const memoKey = `${records.collectionName}|${subject.id}`;
  const carried = [...(subject.carry?.pending ?? [])];
  const written: Record<string, EffectRecord<unknown>> = {
    ...Object.fromEntries(carried.map(([path, settle]) => [path, settle.record])),
    ...sets,
  };
  try {
    if (only === undefined) {
      await updateById(records, subject.id, { $set: written });
    } else {
      // Only if `unchanged` still holds (the caller holds the lock: no writer in between); the
      // document made when `makes` and there is none. One there that fails the filter: its
      // insert fails on the _id, which is the answer "changed".
      const result = await records
        .updateOne({ _id: subject.id, ...only.unchanged }, { $set: written }, { upsert: only.makes })
        .catch((err: unknown) => {
          if (only.makes && isDuplicateKey(err)) return null;
          throw err;
        });
      if (result === null || result.matchedCount + result.upsertedCount === 0) return false;
    }
  } catch (err) {
    // Written or not: unknown, so not kept; the carried settles stay for the next write.
    memo?.delete(memoKey);
    throw err;
  }
  for (const [path, settle] of carried) {
    if (subject.carry!.pending.get(path) === settle) subject.carry!.pending.delete(path);
    // Written as carried (not replaced by a newer record of the same path in `sets`): what waited on it.
    if (written[path] === settle.record) settle.written?.();
  }
  for (const path of Object.keys(sets)) subject.carry?.pending.delete(path);
  if (memo?.has(memoKey)) {
    let doc = (memo.get(memoKey) as Document | null) ?? { _id: subject.id };
    for (const [path, record] of Object.entries(written)) doc = withValueAt(doc, path, record);
    memo.set(memoKey, doc);
  }
  return true;
}

/**
 * Writes the settles the subject's carry still holds, in one write under its lock (retried through
 * a database outage as any known outcome is); nothing when none are left.
 */
export async function flushCarried(subject: EffectSubject): Promise<void> {
  const records = subject.records;
  const carry = subject.carry;
  if (records === undefined || carry === undefined) return;
  clearTimeout(carry.timer);
  carry.timer = undefined;
  // A write the timer began ends first: what it wrote is no longer held, what it failed to is.
  await carry.writing;
  if (carry.pending.size === 0) return;
  await writeKnownOutcome(() =>
    subject.exclusive(async (held) => {
      if (carry.pending.size === 0) return;
      await writeRecords(subject, records, {}, held?.memo);
    }),
  );
}

function settledRecord<R>(
  from: EffectRecord<R>,
  outcome: EffectOutcome<R>,
  finishedAt: Date,
): EffectRecord<R> {
  return {
    ...from,
    state: outcome.state,
    result: outcome.result,
    finished_at: finishedAt,
    ...LEASE_ENDED,
  };
}

/**
 * When the lease of a `running` record ends (its mark's end, or a later renewal by the same
 * attempt), with the clock margin; null when it has ended or the record holds none.
 */
async function liveLeaseEnd(
  lease: NonNullable<EffectSubject['lease']>,
  leaseId: string,
  record: EffectRecord<unknown>,
): Promise<number | null> {
  if (record.state !== 'running' || !record.lease_token || !record.lease_until) return null;
  let until = new Date(record.lease_until).getTime();
  const renewed = await lease.collection.findOne({ _id: leaseId });
  if (renewed !== null && renewed.token === record.lease_token) {
    until = Math.max(until, new Date(renewed.until).getTime());
  }
  const end = until + lease.clockMarginMs;
  return end > Date.now() ? end : null;
}
