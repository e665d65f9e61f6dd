import type { Collection, Document } from 'mongodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EffectGate } from './effect-gate.js';

/** A document effects can be recorded on: any document with a string _id. */
export interface EffectSubjectDoc {
  _id: string;
  [field: string]: unknown;
}

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

export type EffectState = 'pending' | 'running' | 'done' | 'failed' | 'skipped';

export interface EffectRecord<R = Record<string, unknown>> {
  state: EffectState;
  /** Attempts marked so far; it doubles as the record's version for the mark. */
  attempts: number;
  /** When the last attempt was marked. */
  started_at: Date | null;
  /** When the effect was done, skipped or given up. */
  finished_at: Date | null;
  last_error: string | null;
  /** What the effect produced (a provider's id, a message id), or why it was skipped. */
  result: R | null;
}

export function newEffectRecord<R>(): EffectRecord<R> {
  return {
    state: 'pending',
    attempts: 0,
    started_at: null,
    finished_at: null,
    last_error: null,
    result: null,
  };
}

/** The document an effect belongs to, and how to write it without racing its other writers. */
export interface EffectSubject {
  collection: Collection<EffectSubjectDoc>;
  id: string;
  exclusive<T>(write: () => Promise<T>): Promise<T>;
}

export interface EffectOutcome<R> {
  state: 'done' | 'skipped';
  result: R;
  /** Other fields of the subject to set in the same write (e.g. the provider's call id). */
  alsoSet?: Record<string, unknown>;
}

export interface Effect<R> {
  /** Where the record lives on the subject document, e.g. `dial` or `effects.crm`. */
  path: string;
  /** For an attempt left `running`: did it happen? The outside world's answer, or null for no. */
  reconcile?: (record: EffectRecord<R>) => Promise<EffectOutcome<R> | null>;
  /** False when a failure proves nothing happened (the next attempt need not reconcile). */
  mayHaveHappened?: (err: unknown) => boolean;
  /** True when a failure is final: retrying cannot help, the record becomes `failed`. */
  isFinal?: (err: unknown) => boolean;
}

export interface Attempt {
  /** The job's last attempt: a failure now leaves the effect `failed`. */
  lastAttempt: boolean;
  /** The job's gate while its worker stops (effect-gate.ts); a request outside a job has none. */
  gate?: EffectGate;
}

/** Another attempt marked the effect between our read and our mark; this attempt retries. */
export class EffectRaceError extends Error {
  constructor(path: string, id: string) {
    super(`The effect ${path} of ${id} was started by another attempt; checking again.`);
    this.name = 'EffectRaceError';
  }
}

class EffectSubjectMissingError extends Error {
  constructor(id: string) {
    super(`The subject ${id} of an effect does not exist.`);
    this.name = 'EffectSubjectMissingError';
  }
}

const settled = (r: EffectRecord<unknown>): boolean => r.state === 'done' || r.state === 'skipped';

function effectRecordAt<R>(doc: Document | null | undefined, path: string): EffectRecord<R> {
  let value: unknown = doc;
  for (const key of path.split('.')) {
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  }
  return (value as EffectRecord<R> | undefined) ?? newEffectRecord<R>();
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
  perform: () => Promise<EffectOutcome<R>>,
): Promise<EffectRecord<R>> {
  const read = async (): Promise<EffectRecord<R>> => {
    const doc = await subject.collection.findOne({ _id: subject.id }, { projection: { [effect.path]: 1 } });
    if (doc === null) throw new EffectSubjectMissingError(subject.id);
    return effectRecordAt<R>(doc, effect.path);
  };
  const write = (record: EffectRecord<R>, alsoSet: Record<string, unknown> = {}) =>
    subject.exclusive(() =>
      subject.collection.updateOne({ _id: subject.id }, { $set: { ...alsoSet, [effect.path]: record } }),
    );
  const settle = async (from: EffectRecord<R>, outcome: EffectOutcome<R>): Promise<EffectRecord<R>> => {
    const record: EffectRecord<R> = {
      ...from,
      state: outcome.state,
      result: outcome.result,
      finished_at: new Date(),
    };
    await writeKnownOutcome(() => write(record, outcome.alsoSet));
    return record;
  };

  const seen = await read();
  if (settled(seen)) return seen;
  if (seen.state === 'running' && effect.reconcile !== undefined) {
    const found = await effect.reconcile(seen);
    if (found !== null) return settle(seen, found);
  }

  // A stopping worker lets no effect begin from here (its job is parked and handed back); one
  // that has begun is counted until its outcome is recorded (effect-gate.ts).
  const pass = await attempt.gate?.enter();
  try {
    // The mark: only one attempt can move the record on from the version it read.
    const marked = await subject.exclusive(async () => {
      const current = await read();
      if (settled(current)) return current;
      if (current.attempts !== seen.attempts) throw new EffectRaceError(effect.path, subject.id);
      const next: EffectRecord<R> = {
        ...current,
        state: 'running',
        attempts: current.attempts + 1,
        started_at: new Date(),
        finished_at: null,
      };
      await subject.collection.updateOne({ _id: subject.id }, { $set: { [effect.path]: next } });
      return next;
    });
    if (settled(marked)) return marked;

    let outcome: EffectOutcome<R>;
    try {
      outcome = await perform();
    } catch (err) {
      const final = attempt.lastAttempt || (effect.isFinal?.(err) ?? false);
      const happened = effect.mayHaveHappened?.(err) ?? true;
      const state: EffectState = final ? 'failed' : happened ? 'running' : 'pending';
      const message = err instanceof Error ? err.message : String(err);
      await write({
        ...marked,
        state,
        last_error: message.slice(0, 500),
        ...(final ? { finished_at: new Date() } : {}),
      }).catch(() => {
        // Left `running`: the next attempt reconciles or repeats, which is the safe side.
      });
      throw err;
    }
    return await settle(marked, outcome);
  } finally {
    pass?.();
  }
}
