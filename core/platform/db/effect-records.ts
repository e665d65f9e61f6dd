import type { Collection, Document } from 'mongodb';
import { BusyUntilError } from '../busy-until.js';
import { valueAt } from '../own.js';
import type { EffectGate } from './effect-gate.js';
import type { HeldLock } from '../redis-mutex.js';

// What the effect recorder (effect-recorder.ts, whose opening comment says how it works) keeps and
// is given: an effect's record and its lease and answer documents, the subject it is recorded on,
// the effect and its attempt, the errors an attempt ends with, and the record's place in a document.

/** A document effects can be recorded on: any document with a string _id. */
export interface EffectSubjectDoc {
  _id: string;
  [field: string]: unknown;
}

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
  /** The running attempt's lease: its token (renewals carry it) and its end as marked; null once it ended. */
  lease_token?: string | null;
  lease_until?: Date | null;
}

export function newEffectRecord<R>(): EffectRecord<R> {
  return {
    state: 'pending',
    attempts: 0,
    started_at: null,
    finished_at: null,
    last_error: null,
    result: null,
    lease_token: null,
    lease_until: null,
  };
}

/**
 * The renewal of a running effect's lease (`_id`: see leaseIdOf), written only by its holder; or
 * (`_id`: see outcomeIdOf) the outcome an attempt knows, before its record is written.
 */
export interface EffectLeaseDoc {
  _id: string;
  token: string;
  until: Date;
  outcome?: { state: 'done' | 'skipped'; result: unknown; alsoSet?: Record<string, unknown> };
}

/** The document an effect belongs to, and how to write it without racing its other writers. */
export interface EffectSubject {
  collection: Collection<EffectSubjectDoc>;
  id: string;
  /**
   * Runs `write` with the subject's lock held; `held` when the lock is a record lock
   * (withRecordLock) whose holders keep its memo (`keepsMemo`): the recorder then keeps there the
   * records document as it last read or wrote it, for the next holder it hands the lock on to.
   */
  exclusive<T>(write: (held?: HeldLock) => Promise<T>): Promise<T>;
  /**
   * Running effects hold a lease of `ms` (EFFECT_LEASE_MS), renewed in `collection`, judged live
   * for `clockMarginMs` past its end (EFFECT_LEASE_CLOCK_MARGIN_MS); none without.
   */
  lease?: { collection: Collection<EffectLeaseDoc>; ms: number; clockMarginMs: number };
  /** Told when an attempt's outcome is recorded (EFFECT_TIMING_FILE: measurements). */
  observe?: (timing: EffectTiming) => void;
  /**
   * Where the records live: the document of this collection with the subject's `_id`, at the
   * effects' paths (made by the first mark); none: on the subject document itself.
   */
  records?: Collection<EffectSubjectDoc>;
  /**
   * Settles that go with the next write of the records document ("Settles carried" in effect-recorder.ts);
   * only with `records`. Whoever gives it writes what is left with flushCarried.
   */
  carry?: SettleCarry;
  /**
   * The document that holds the records (`records`' document, else the subject's) as read before
   * the effects began, outside the lock (null: there was none); only with `lease`. Each effect's
   * first look starts from it ("From what was seen" in effect-recorder.ts).
   */
  seen?: { doc: Document | null };
}

/** A settle carried: its record, and what follows its write (its stored answer let go). */
interface CarriedSettle {
  record: EffectRecord<unknown>;
  written?: () => void;
}

/** Records settled but not yet written, by path (EffectSubject.carry). */
export interface SettleCarry {
  pending: Map<string, CarriedSettle>;
  /** The longest a settle waits for a write to go with before it is written on its own. */
  lingerMs: number;
  /** The write on its own, scheduled; and while it runs. */
  timer?: NodeJS.Timeout;
  writing?: Promise<void>;
}

export const newSettleCarry = (lingerMs: number): SettleCarry => ({ pending: new Map(), lingerMs });

/** The lease document of one effect of one subject. */
export const leaseIdOf = (subject: EffectSubject, path: string): string =>
  `${subject.collection.collectionName}|${subject.id}|${path}`;

/** The outcome document of one attempt (its lease token) of one effect of one subject. */
export const outcomeIdOf = (leaseId: string, token: string): string => `${leaseId}|outcome|${token}`;

/** When an attempt's steps happened (ms since epoch, the worker's clock), for measurements. */
export interface EffectTiming {
  /**
   * `recorded`: by the attempt that performed it; `recovered`: by a later attempt, from the
   * answer the performing one stored before it died (then only `answered_at` is known).
   */
  kind: 'recorded' | 'recovered';
  subject: string;
  path: string;
  attempt: number;
  token: string;
  marked_at: number | null;
  /** `perform` began (for a mail: the SMTP exchange). */
  sent_at: number | null;
  /** `perform` returned: the outside world's answer was read (a mail: the server's 250). */
  answered_at: number;
  /** The outcome document was stored (effects that cannot be asked about), else null. */
  outcome_stored_at: number | null;
  /** The record on the subject was written. */
  recorded_at: number;
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
  /**
   * Repeating it does nothing twice, even by two attempts at once (a claim on an id of its own, or
   * steps recorded on their own): it is not marked `running` (its record is written once, at the
   * settle), its answer is not stored before its record, and an attempt left `running` is simply
   * repeated.
   */
  repeatable?: boolean;
  /** False when a failure proves nothing happened (the next attempt need not reconcile). */
  mayHaveHappened?: (err: unknown) => boolean;
  /** True when a failure is final: retrying cannot help, the record becomes `failed`. */
  isFinal?: (err: unknown) => boolean;
  /**
   * The longest `perform` may run (its request out): it is aborted then, through its signal, and
   * the lease taken at the mark lasts this much longer, so that no other attempt begins while
   * it may still be sending. None: the renewals alone keep the lease.
   */
  boundMs?: number;
}

/** A `perform` ran past its effect's `boundMs` and was aborted. */
export class EffectBoundError extends Error {
  constructor(path: string, id: string, boundMs: number) {
    super(`The effect ${path} of ${id} did not complete within ${boundMs} ms and was abandoned.`);
    this.name = 'EffectBoundError';
  }
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

/** Another attempt runs the effect under a live lease: this one looks again when the lease ends. */
export class EffectBusyError extends BusyUntilError {
  constructor(path: string, id: string, until: number) {
    super(
      `The effect ${path} of ${id} is under way in another attempt; checking again when its lease ends.`,
      until,
    );
    this.name = 'EffectBusyError';
  }
}

export class EffectSubjectMissingError extends Error {
  constructor(id: string) {
    super(`The subject ${id} of an effect does not exist.`);
    this.name = 'EffectSubjectMissingError';
  }
}

export const settled = (r: EffectRecord<unknown>): boolean => r.state === 'done' || r.state === 'skipped';

/** What a record holds once its attempt ended: no lease. */
export const LEASE_ENDED = { lease_token: null, lease_until: null } as const;

/** `from` settled with `outcome` at `finishedAt`. */
export function settledRecord<R>(
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

/** `doc` with `value` at the dotted `path`, `doc` itself unchanged. */
export function withValueAt(doc: Document, path: string, value: unknown): Document {
  const [head, ...rest] = path.split('.');
  const inner = doc[head!] as unknown;
  return {
    ...doc,
    [head!]:
      rest.length === 0
        ? value
        : withValueAt(
            typeof inner === 'object' && inner !== null ? (inner as Document) : {},
            rest.join('.'),
            value,
          ),
  };
}

export function effectRecordAt<R>(doc: Document | null | undefined, path: string): EffectRecord<R> {
  return (valueAt(doc, path) as EffectRecord<R> | undefined) ?? newEffectRecord<R>();
}
