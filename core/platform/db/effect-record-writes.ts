import type { Collection, Document } from 'mongodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EffectGate, EffectPass } from './effect-gate.js';
import { isDuplicateKey } from './claim.js';
import { updateById } from './upsert.js';
import {
  withValueAt,
  type EffectRecord,
  type EffectSubject,
  type EffectSubjectDoc,
} from './effect-records.js';

// The effect recorder's writes of a records document (EffectSubject.records) that are not one
// effect's alone: the marks gathered from one version seen, written together by the first holder
// of the lock ("Marks gathered" in effect-recorder.ts), and the settles carried to the next write
// ("Settles carried"); and the retry of an outcome that is known into its record.

/** A mark from the version seen, waiting for a holder of the lock to write it ("Marks gathered"). */
export interface GatheredMark {
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

export function marksWaitingOn(seen: object): Set<GatheredMark> {
  let waiting = marksWaiting.get(seen);
  if (waiting === undefined) marksWaiting.set(seen, (waiting = new Set()));
  return waiting;
}

/** Writes what the carry holds `lingerMs` from now unless a write takes it first; its failure is left to the next write. */
export function lingerThenFlush(subject: EffectSubject): void {
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
export async function writeKnownOutcome(write: () => Promise<unknown>): Promise<void> {
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

/**
 * Writes the marks gathered by now, `mine` among them, in one write of the records document whose
 * filter is every record as seen; the caller holds the lock. Each mark passes its attempt's gate
 * first (one closed is left to its owner). Null: `mine`'s gate is closed, nothing written. A
 * write that fails leaves the others waiting, to write their own in their turns.
 */
export async function writeGathered(
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
export async function writeRecords(
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
