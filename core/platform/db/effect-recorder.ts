import type { EffectPass } from './effect-gate.js';
import { EffectAttempt } from './effect-attempt.js';
import { lingerThenFlush, marksWaitingOn, writeGathered, type GatheredMark } from './effect-record-writes.js';
import { storableText } from '../text.js';
import {
  EffectBoundError,
  EffectBusyError,
  EffectRaceError,
  LEASE_ENDED,
  settled,
  settledRecord,
  type Attempt,
  type Effect,
  type EffectOutcome,
  type EffectRecord,
  type EffectState,
  type EffectSubject,
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

/** Runs `perform` unless the effect is already done or skipped, recording each step on the subject. */
export async function runEffect<R>(
  subject: EffectSubject,
  effect: Effect<R>,
  attempt: Attempt,
  perform: (signal: AbortSignal) => Promise<EffectOutcome<R>>,
): Promise<EffectRecord<R>> {
  const run = new EffectAttempt(subject, effect, attempt);
  try {
    const begun = await begin(run);
    if ('ended' in begun) return begun.ended;
    const { marked, wasMarked } = begun;
    const markedAt = Date.now();
    if (wasMarked) run.renewLease();
    const sentAt = Date.now();
    const outcome = await performOrRecordFailure(run, marked, wasMarked, perform);
    return await recordOutcome(run, marked, outcome, { markedAt: wasMarked ? markedAt : null, sentAt });
  } finally {
    await run.end();
  }
}

/**
 * Where an attempt stands after its first look: ended (the record settled, before it or by it
 * from an answer found), or begun (its `running` record written, or, for a repeatable effect, not:
 * `wasMarked` false).
 */
type Begun<R> = { ended: EffectRecord<R> } | { marked: EffectRecord<R>; wasMarked: boolean };

/** The first look, then a record `running` or read without a lease looked into and marked. */
async function begin<R>(run: EffectAttempt<R>): Promise<Begun<R>> {
  const first = await firstLook(run);
  if ('marked' in first) {
    run.pass = first.pass;
    return { marked: first.marked, wasMarked: true };
  }
  if ('unmarked' in first || run.goesUnmarked(first.seen)) {
    // Neither settled nor `running` (goesUnmarked): nothing to return or look into first.
    const current = 'unmarked' in first ? first.unmarked : first.seen;
    // A stopping worker lets it begin no more (its job is parked and handed back).
    run.pass = await run.attempt.gate?.enter();
    return {
      marked: { ...current, attempts: current.attempts + 1, started_at: new Date(), finished_at: null },
      wasMarked: false,
    };
  }
  return lookInto(run, first.seen);
}

type FirstLook<R> =
  | { seen: EffectRecord<R> }
  | { marked: EffectRecord<R>; pass: EffectPass | undefined }
  | { unmarked: EffectRecord<R> };

/**
 * The first look. With a lease, under the lock: a record new, pending or failed is marked there
 * and then, from the version just read (one read; an attempt racing it finds it `running` under a
 * live lease, or done). Without a lease, nothing tells a racing attempt from a dead one: the record
 * is read first, and the mark (lookInto) moves it on only from the version read.
 */
async function firstLook<R>(run: EffectAttempt<R>): Promise<FirstLook<R>> {
  const { subject, effect, attempt, records, lease, seenDoc, seenRecord } = run;
  // From the version the job saw (EffectSubject.seen): settled is final, and a repeatable
  // effect not begun goes unmarked, neither with the lock; one to mark is marked if unchanged.
  const fromSeen: FirstLook<R> | undefined =
    seenRecord === undefined
      ? undefined
      : settled(seenRecord)
        ? { seen: seenRecord }
        : run.goesUnmarked(seenRecord)
          ? { unmarked: seenRecord }
          : undefined;
  if (fromSeen !== undefined) return fromSeen;
  if (lease === undefined) return { seen: await run.read() };
  // To mark in the records document from the version seen: registered before the lock is asked
  // for, so that the first holder writes it with the others' from that version ("Marks gathered").
  const gathered: GatheredMark | undefined =
    records !== undefined && seenRecord !== undefined && seenRecord.state !== 'running'
      ? {
          path: effect.path,
          next: run.runningFrom(seenRecord),
          unchanged: run.unchangedAsSeen(seenRecord),
          gate: attempt.gate,
        }
      : undefined;
  if (gathered !== undefined) marksWaitingOn(seenDoc!).add(gathered);
  return subject
    .exclusive(async (held): Promise<FirstLook<R>> => {
      /** The look at `current`; null when it was seen and has been written since. */
      const look = async (current: EffectRecord<R>, asSeen: boolean): Promise<FirstLook<R> | null> => {
        if (settled(current) || run.mustLookFirst(current)) return { seen: current };
        if (run.goesUnmarked(current)) return { unmarked: current };
        // A stopping worker's closed gate: the lock is let go of, and the job parked (begin).
        const entered = attempt.gate?.enterNow();
        if (entered === null) return { seen: current };
        try {
          const marked = asSeen ? await run.markAsSeen(current) : await run.mark(current, held);
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
          gathered.decided ?? (await writeGathered(subject, records!, gathered, seenDoc!, run.memoOf(held)));
        // This attempt's gate is closed: nothing written, the job parks (begin).
        if (decided === null) {
          marksWaitingOn(seenDoc!).delete(gathered);
          return { seen: seenRecord! };
        }
        if (decided.written) return { marked: gathered.next as EffectRecord<R>, pass: decided.pass };
        return (await look(await run.read(held), false))!;
      }
      // On the subject itself, from the version seen unless it was `running`; written since it
      // was seen: read, and looked at.
      const asSeen = seenRecord !== undefined && seenRecord.state !== 'running';
      return (asSeen ? await look(seenRecord, true) : null) ?? (await look(await run.read(held), false))!;
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
}

/**
 * A record seen settled is returned; one `running` is looked into without the lock (the answer its
 * attempt stored, its lease, the outside world); then the mark, under the lock, moves it on only
 * from the version read (else EffectRaceError).
 */
async function lookInto<R>(run: EffectAttempt<R>, seen: EffectRecord<R>): Promise<Begun<R>> {
  const { subject, effect, attempt } = run;
  if (settled(seen)) return { ended: seen };
  // The attempt that marked it got its answer and died before writing the record: recorded now.
  const known = await run.storedOutcome(seen);
  if (known !== null) {
    const record = await run.settle(seen, known.outcome as EffectOutcome<R>, known.until);
    run.recovered(known, seen.attempts);
    await run.dropOutcome(known.token);
    return { ended: record };
  }
  if (run.lease !== undefined) {
    const busyUntil = await run.liveLeaseEnd(seen);
    if (busyUntil !== null) throw new EffectBusyError(effect.path, subject.id, busyUntil);
  }
  if (seen.state === 'running' && effect.reconcile !== undefined) {
    const found = await effect.reconcile(seen);
    if (found !== null) return { ended: await run.settle(seen, found) };
  }

  // A stopping worker lets no effect begin from here (its job is parked and handed back); one
  // that has begun is counted until its outcome is recorded (effect-gate.ts).
  run.pass = await attempt.gate?.enter();
  // The mark: only one attempt can move the record on from the version it read.
  const marked = await subject.exclusive(async (held) => {
    const current = await run.read(held);
    if (settled(current)) return current;
    if (current.attempts !== seen.attempts) throw new EffectRaceError(effect.path, subject.id);
    const late = await run.storedOutcome(current);
    if (late !== null) {
      const record = settledRecord(current, late.outcome as EffectOutcome<R>, late.until);
      await run.store(record, late.outcome!.alsoSet, held);
      run.recovered(late, current.attempts);
      void run.dropOutcome(late.token);
      return record;
    }
    return run.mark(current, held);
  });
  return settled(marked) ? { ended: marked } : { marked, wasMarked: true };
}

/** Runs `perform`, aborted at the effect's `boundMs`; a failure is recorded, then thrown. */
async function performOrRecordFailure<R>(
  run: EffectAttempt<R>,
  marked: EffectRecord<R>,
  wasMarked: boolean,
  perform: (signal: AbortSignal) => Promise<EffectOutcome<R>>,
): Promise<EffectOutcome<R>> {
  const { subject, effect } = run;
  const abort = new AbortController();
  const bound =
    effect.boundMs === undefined
      ? undefined
      : setTimeout(
          () => abort.abort(new EffectBoundError(effect.path, subject.id, effect.boundMs!)),
          effect.boundMs,
        );
  let outcome: EffectOutcome<R>;
  try {
    outcome = await perform(abort.signal);
  } catch (err) {
    clearTimeout(bound);
    await recordFailure(run, marked, wasMarked, err);
    throw err;
  }
  clearTimeout(bound);
  return outcome;
}

/**
 * The record of a failed `perform`: `failed` when final, else `running` when it may have happened
 * (the next attempt reconciles or repeats) or `pending`. Not written is the safe side too.
 */
async function recordFailure<R>(
  run: EffectAttempt<R>,
  marked: EffectRecord<R>,
  wasMarked: boolean,
  err: unknown,
): Promise<void> {
  const { subject, effect, attempt } = run;
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
      ? run.write(failed)
      : // No lease kept other attempts out: one may have settled it meanwhile, which stands.
        subject.exclusive(async (held) => {
          if (!settled(await run.read(held))) await run.store(failed, {}, held);
        })
  ).catch(() => {
    // Left `running` (or unwritten): the next attempt reconciles or repeats, which is the safe side.
  });
}

/**
 * The outcome of a `perform` that returned: its answer stored first where it cannot be asked
 * about afterwards, then its settle carried or written.
 */
async function recordOutcome<R>(
  run: EffectAttempt<R>,
  marked: EffectRecord<R>,
  outcome: EffectOutcome<R>,
  timing: { markedAt: number | null; sentAt: number },
): Promise<EffectRecord<R>> {
  const { subject, effect } = run;
  // Nothing between the answer and this insert: it is what a worker dying now would lose.
  const answeredAt = new Date();
  // Only an effect with `outcomes` waits for a store: the others' settles are carried at once.
  const outcomeStoredAt = run.outcomes === undefined ? null : await run.storeOutcome(outcome, answeredAt);
  const carry = run.records === undefined ? undefined : subject.carry;
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
      ...(outcomeStoredAt === null ? {} : { written: () => void run.dropOutcome(run.token) }),
    });
    lingerThenFlush(subject);
  } else {
    record = await run.settle(marked, outcome, answeredAt);
  }
  subject.observe?.({
    kind: 'recorded',
    subject: subject.id,
    path: effect.path,
    attempt: marked.attempts,
    token: run.token,
    marked_at: timing.markedAt,
    sent_at: timing.sentAt,
    answered_at: answeredAt.getTime(),
    outcome_stored_at: outcomeStoredAt,
    recorded_at: Date.now(),
  });
  // The record holds it now (a carried one: once written, see writeRecords); a document left
  // behind (the delete lost) names a token no record holds.
  if (outcomeStoredAt !== null && !carried) void run.dropOutcome(run.token);
  return record;
}
