// Contacts import (CONTRACT §3.7): the request stores an import record and enqueues one job
// with the rows; a worker classifies every row as imported, duplicate or error, and the
// request waits for the result (CONTACTS_IMPORT_WAIT_MS), else answers 202 with the job_id.
//
// How a phone or an email stays with one contact of a firm, on FerretDB too: key documents
// `<firm>|phone|<E.164>` / `<firm>|email|<address>` claimed by insertMany (unordered, in
// batches of 500): a duplicate-key error is the answer "held already", with no lookup first and
// no query over the contacts. Rows are then classified in order, as if imported one at a time:
// a row is imported when every key it has was claimed by this import and no earlier row of
// the request took it; otherwise it is a duplicate (of an existing contact, or of an earlier
// imported row). Keys claimed for rows that turned out duplicates are released; a key first
// proposed for a row that turned out a duplicate is handed to the row that took it.
//
// Why inserts and not reads: FerretDB 1.24 on PostgreSQL checks a unique _id through its index,
// but answers `find`, `update` and `delete` by _id with a sequential scan of the collection
// (`_jsonb->'_id' @> value`: ~70 ms each at 200,000 keys), and `_id: {$in}` by reading every
// document itself (seconds). So the common path only inserts; the rare releases are deleted per
// claim batch (settleKeys), and a retry reads its own claims back with one equality query.
//
// Imports of one firm take turns (a Redis lock per firm, renewed while held, waited for by
// delaying the job): two imports with the same contact could otherwise each claim one of its
// keys, each find the other key held and each call it a duplicate — no contact at all. The
// claims, not the lock, are what keep a phone or email with one contact.
//
// A crash mid-import: the job is retried, and the retry does the same work again. Contact ids
// are derived from the import and the row, so inserting them again changes nothing; keys this
// import claimed before the crash are recognised as its own (import_id; read back only when the
// record says claiming had begun); the classification is the same, so is the summary. A finished
// import answers its stored result. An import whose every attempt failed is rolled back (its
// contacts and claims removed) and reported `failed`.
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claimMany } from '../../platform/db/claim.js';
import { notFound, serviceUnavailable, tooManyRows } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { ImportContactsJob } from '../../../jobs/contacts.js';
import { mayRead } from '../access/access.js';
import type { Principal } from '../access/principal.js';
import { isKnownCountry, type CountryCode } from '../contact-points/phones.js';
import { parseContactRow, type ContactFields } from './contact-row.js';
import {
  contactKeyId,
  contactKeysCollection,
  contactsCollection,
  type ContactDoc,
  type ContactKeyDoc,
  type ContactKeyKind,
} from './contacts.js';
import { contactSearchTerms } from './search-terms.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** Rows one request may carry (CONTRACT §3.7); more is 413 too_many_rows, nothing imported. */
export const MAX_IMPORT_ROWS = 5000;
/** error_rows lists at most this many rows (the first ones). */
const MAX_ERROR_ROWS = 100;
/** Key documents per insertMany; their releases are deleted batch by batch. */
const CLAIM_BATCH = 500;
const LOCK_TTL_MS = 30_000;

export interface ImportErrorRow {
  index: number;
  reason: string;
}

export interface ImportResult {
  imported: number;
  duplicates: number;
  errors: number;
  error_rows: ImportErrorRow[];
}

type ImportStatus = 'processing' | 'completed' | 'failed';

interface ContactImportDoc {
  /** The job_id. */
  _id: string;
  firm: string;
  status: ImportStatus;
  /** queued → claiming (keys may be held by this import: a retry reads back what it cannot claim) → done. */
  stage: 'queued' | 'claiming' | 'done';
  rows: number;
  default_country: string;
  result: ImportResult | null;
  failure: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

const imports = (db: Db) => collection<ContactImportDoc>(db, COLLECTIONS.contactImports);

/** The job cannot run: its record is gone, belongs elsewhere or was given up (the job must not retry). */
export class ImportNotRunnableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportNotRunnableError';
  }
}

// ---------------------------------------------------------------- the request side

/** Stores the import record and enqueues its job; returns the job_id. 413 over 5,000 rows. */
export async function startContactImport(
  services: Services,
  firm: string,
  rows: unknown[],
  country: CountryCode,
): Promise<string> {
  if (rows.length > MAX_IMPORT_ROWS) {
    throw tooManyRows(
      `An import takes at most ${MAX_IMPORT_ROWS.toLocaleString('en-US')} rows per request; this one has ` +
        `${rows.length.toLocaleString('en-US')}. Nothing was imported: send the rows in batches.`,
    );
  }
  const db = services.mongo.db;
  const importId = newId('imp');
  const now = new Date();
  await imports(db).insertOne({
    _id: importId,
    firm,
    status: 'processing',
    stage: 'queued',
    rows: rows.length,
    default_country: country,
    result: null,
    failure: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  });
  try {
    await enqueue(services.queues, JOBS.importContacts, { importId, firm, defaultCountry: country, rows });
  } catch (err) {
    // Not enqueued (503): no record may claim otherwise.
    await imports(db)
      .deleteOne({ _id: importId })
      .catch(() => {});
    throw err;
  }
  return importId;
}

/**
 * The import's result once its job has finished, waiting up to `waitMs` (reads of its record,
 * backing off to 250 ms); null when it is still processing then, or the client has gone.
 * A failed import is a 503: it was rolled back, nothing was imported, and it may be sent again.
 */
export async function awaitContactImport(
  db: Db,
  importId: string,
  waitMs: number,
  clientGone: () => boolean,
): Promise<ImportResult | null> {
  // No budget (CONTACTS_IMPORT_WAIT_MS=0): every import answers 202, even one a fast worker has
  // already finished (it is read with GET /api/contacts/import/{job_id}).
  if (waitMs <= 0) return null;
  const deadline = Date.now() + waitMs;
  let pause = 20;
  for (;;) {
    const record = await imports(db).findOne({ _id: importId });
    if (record?.status === 'completed' && record.result !== null) return record.result;
    if (record?.status === 'failed') throw importFailed(record);
    const left = deadline - Date.now();
    if (left <= 0 || clientGone()) return null;
    await sleep(Math.min(pause, left));
    pause = Math.min(Math.round(pause * 1.5), 250);
  }
}

const importFailed = (record: ContactImportDoc) =>
  serviceUnavailable(
    `The import failed (${record.failure ?? 'unknown error'}) and was rolled back: nothing was imported. Send it again.`,
    30,
  );

export type ImportView =
  | { job_id: string; status: 'processing' }
  | ({ job_id: string; status: 'completed' } & ImportResult)
  | { job_id: string; status: 'failed'; message: string };

/** GET /api/contacts/import/{job_id}: another firm's import is not found, as a missing one. */
export async function getContactImport(
  services: Services,
  principal: Principal,
  importId: string,
): Promise<ImportView> {
  const record = await imports(services.mongo.db).findOne({ _id: importId });
  if (record === null || !mayRead(principal, record.firm)) {
    throw notFound('import_job', 'No contacts import was found with that job_id.');
  }
  if (record.status === 'completed' && record.result !== null) {
    return { job_id: record._id, status: 'completed', ...record.result };
  }
  if (record.status === 'failed') {
    return { job_id: record._id, status: 'failed', message: failedMessage(record.failure) };
  }
  // A job that died without its processor running to the end (stalled too often, or removed)
  // leaves the record processing: BullMQ knows. Its writes are rolled back here (and by the sweep).
  const gone = await jobGaveUp(services, importId);
  if (gone === null) return { job_id: record._id, status: 'processing' };
  await failContactImport(services, { importId, firm: record.firm }, gone);
  return { job_id: record._id, status: 'failed', message: failedMessage(gone) };
}

/** How long an import record may stay processing before the sweep asks BullMQ about its job. */
const ABANDONED_AFTER_MS = 10 * 60_000;

/**
 * The sweep (every 10 minutes): imports still processing whose job BullMQ gave up without the
 * processor's last attempt running (it stalled too often: workers kept dying) or no longer has
 * are rolled back and marked failed, so no claim is held for a contact that never came.
 */
export async function settleAbandonedImports(services: Services): Promise<number> {
  const cutoff = new Date(Date.now() - ABANDONED_AFTER_MS);
  const stale = await imports(services.mongo.db)
    .find({ status: 'processing', updated_at: { $lt: cutoff } })
    .limit(100)
    .toArray();
  let settled = 0;
  for (const record of stale) {
    const gone = await jobGaveUp(services, record._id);
    if (gone === null) continue;
    await failContactImport(services, { importId: record._id, firm: record.firm }, gone);
    settled += 1;
  }
  return settled;
}

const failedMessage = (failure: string | null) =>
  `The import failed (${failure ?? 'unknown error'}); send it again.`;

async function jobGaveUp(services: Services, importId: string): Promise<string | null> {
  try {
    // The state alone: the job itself carries up to 16 MiB of rows.
    const queue = services.queues[JOBS.importContacts.queue];
    const state = await queue.getJobState(importId);
    if (state === 'unknown') return 'its job is no longer queued';
    if (state !== 'failed') return null;
    return (await queue.getJob(importId))?.failedReason ?? 'its job failed';
  } catch {
    // Redis unreachable: the record's own status is the answer.
    return null;
  }
}

// ---------------------------------------------------------------- the worker side

interface PlannedRow {
  index: number;
  contactId: string;
  fields: ContactFields;
  /** Key document ids of its phone and email. */
  keys: string[];
}

interface ImportPlan {
  errorRows: ImportErrorRow[];
  candidates: PlannedRow[];
  /** Each key of the request once, proposed for the first row that has it, in claim batches. */
  keyDocs: ContactKeyDoc[][];
}

/** Contact ids follow from the import and the row, so a retried import inserts the same contacts. */
const contactIdOf = (importId: string, index: number): string =>
  `ct_${importId.replace(/^imp_/, '')}_${String(index).padStart(4, '0')}`;

function planImport(job: ImportContactsJob, country: CountryCode, createdAt: Date): ImportPlan {
  const errorRows: ImportErrorRow[] = [];
  const candidates: PlannedRow[] = [];
  const keyDocs = new Map<string, ContactKeyDoc>();
  job.rows.forEach((row, index) => {
    const parsed = parseContactRow(row, country);
    if (!parsed.ok) {
      errorRows.push({ index, reason: parsed.reason });
      return;
    }
    const contactId = contactIdOf(job.importId, index);
    const keyed: Array<[ContactKeyKind, string | undefined]> = [
      ['phone', parsed.fields.phone],
      ['email', parsed.fields.email],
    ];
    const keys: string[] = [];
    for (const [kind, value] of keyed) {
      if (value === undefined) continue;
      const id = contactKeyId(job.firm, kind, value);
      keys.push(id);
      if (!keyDocs.has(id)) {
        keyDocs.set(id, {
          _id: id,
          firm: job.firm,
          kind,
          value,
          contact_id: contactId,
          import_id: job.importId,
          claim_batch: `${job.importId}#${Math.floor(keyDocs.size / CLAIM_BATCH)}`,
          created_at: createdAt,
        });
      }
    }
    candidates.push({ index, contactId, fields: parsed.fields, keys });
  });
  const docs = [...keyDocs.values()];
  const batches: ContactKeyDoc[][] = [];
  for (let start = 0; start < docs.length; start += CLAIM_BATCH)
    batches.push(docs.slice(start, start + CLAIM_BATCH));
  return { errorRows, candidates, keyDocs: batches };
}

/** Rows in order, as if one at a time: imported when all its keys are this import's and still free. */
function classify(
  candidates: PlannedRow[],
  ours: ReadonlyMap<string, unknown>,
): { imported: PlannedRow[]; duplicates: number; owner: Map<string, string> } {
  const owner = new Map<string, string>();
  const imported: PlannedRow[] = [];
  let duplicates = 0;
  for (const row of candidates) {
    if (row.keys.every((k) => ours.has(k) && !owner.has(k))) {
      imported.push(row);
      for (const k of row.keys) owner.set(k, row.contactId);
    } else {
      duplicates += 1;
    }
  }
  return { imported, duplicates, owner };
}

const importLockKey = (services: Services, firm: string): string =>
  `${services.config.queuePrefix}:lock:contacts-import:${firm}`;

function countryOf(job: ImportContactsJob): CountryCode {
  const country = job.defaultCountry.toUpperCase();
  if (!isKnownCountry(country)) throw new ImportNotRunnableError(`unknown default country ${country}`);
  return country;
}

async function runnableRecord(db: Db, job: ImportContactsJob): Promise<ContactImportDoc> {
  const record = await imports(db).findOne({ _id: job.importId });
  if (record === null || record.firm !== job.firm) {
    throw new ImportNotRunnableError(`no import record ${job.importId} for firm ${job.firm}`);
  }
  if (record.status === 'failed') throw new ImportNotRunnableError(`import ${job.importId} was given up`);
  return record;
}

/**
 * Runs one import job to its result (the stored one when it already finished). Throws
 * RecordBusyError when another import of the firm holds the firm's turn: the caller delays the job.
 */
export async function runContactImport(services: Services, job: ImportContactsJob): Promise<ImportResult> {
  const db = services.mongo.db;
  const first = await runnableRecord(db, job);
  if (first.status === 'completed' && first.result !== null) return first.result;
  const plan = planImport(job, countryOf(job), first.created_at);
  return withRecordLock(
    services.redis,
    importLockKey(services, job.firm),
    async () => {
      // Read again inside the firm's turn: an earlier attempt may have finished meanwhile.
      const record = await runnableRecord(db, job);
      if (record.status === 'completed' && record.result !== null) return record.result;
      return applyPlan(db, record, plan);
    },
    { ttlMs: LOCK_TTL_MS, waitMs: 1000, owner: job.importId, renew: true },
  );
}

async function applyPlan(db: Db, record: ContactImportDoc, plan: ImportPlan): Promise<ImportResult> {
  const keys = contactKeysCollection(db);
  const retry = record.stage === 'claiming';
  if (!retry) {
    await imports(db).updateOne({ _id: record._id }, { $set: { stage: 'claiming', updated_at: new Date() } });
  }
  /** The keys this import holds, as their documents say now. */
  const ours = new Map<string, ContactKeyDoc>();
  // Claim every key of the request; a taken one answers with its duplicate-key error.
  for (const batch of plan.keyDocs) {
    const claimed = await claimMany(keys, batch);
    for (const doc of batch) if (claimed.has(doc._id)) ours.set(doc._id, doc);
  }
  if (retry) {
    // Only after a crash: the keys an earlier attempt claimed (one query, an equality).
    for (const doc of await keys.find({ import_id: record._id }).toArray()) ours.set(doc._id, doc);
  }
  const { imported, duplicates, owner } = classify(plan.candidates, ours);
  await settleKeys(db, ours, owner);
  const contacts: ContactDoc[] = imported.map((row) => ({
    _id: row.contactId,
    firm: record.firm,
    ...row.fields,
    search_terms: contactSearchTerms(row.fields),
    import_id: record._id,
    created_at: record.created_at,
  }));
  // Contact ids are the import's own: one already there was inserted by an earlier attempt.
  for (let start = 0; start < contacts.length; start += CLAIM_BATCH) {
    await claimMany(contactsCollection(db), contacts.slice(start, start + CLAIM_BATCH));
  }
  const result: ImportResult = {
    imported: imported.length,
    duplicates,
    errors: plan.errorRows.length,
    error_rows: plan.errorRows.slice(0, MAX_ERROR_ROWS),
  };
  const now = new Date();
  await imports(db).updateOne(
    { _id: record._id },
    { $set: { status: 'completed', stage: 'done', result, updated_at: now, completed_at: now } },
  );
  return result;
}

/**
 * Keys claimed for rows that turned out duplicates are released; a key first proposed for such
 * a row goes to the row that took it (released and claimed again, naming that row). Deleted by
 * claim batch: FerretDB answers an equality from PostgreSQL and filters the rest itself, so
 * `{claim_batch, _id: {$in}}` reads at most one batch of documents (a bare `_id: {$in}`, or a
 * delete by _id, has it read every key of every firm); MongoDB serves the $in from _id.
 */
async function settleKeys(
  db: Db,
  ours: ReadonlyMap<string, ContactKeyDoc>,
  owner: ReadonlyMap<string, string>,
): Promise<void> {
  const keys = contactKeysCollection(db);
  const byBatch = new Map<string, { release: string[]; handOver: ContactKeyDoc[] }>();
  for (const [key, doc] of ours) {
    const contactId = owner.get(key);
    if (contactId === doc.contact_id) continue;
    const fixes = byBatch.get(doc.claim_batch) ?? { release: [], handOver: [] };
    byBatch.set(doc.claim_batch, fixes);
    fixes.release.push(key);
    if (contactId !== undefined) fixes.handOver.push({ ...doc, contact_id: contactId });
  }
  for (const [claimBatch, { release, handOver }] of byBatch) {
    await keys.deleteMany({ claim_batch: claimBatch, _id: { $in: release } });
    if (handOver.length === 0) continue;
    // Only this import's turn could take them in between; if one was (the turn lapsed), retry.
    const claimed = await claimMany(keys, handOver);
    if (claimed.size !== handOver.length) throw new Error('a key being handed over was taken meanwhile');
  }
}

/**
 * The import failed for good (its job's last attempt failed, or BullMQ gave the job up): it is
 * marked failed, then what it wrote is removed — its contacts, then the key documents it holds —
 * so a later import of the same rows finds them free. One delete each (an equality on
 * import_id); safe to repeat. Best effort: the store may be what failed.
 */
export async function failContactImport(
  services: Services,
  ref: { importId: string; firm: string },
  reason: string,
): Promise<void> {
  const db = services.mongo.db;
  const record = await imports(db).findOne({ _id: ref.importId });
  if (record === null || record.firm !== ref.firm || record.status === 'completed') return;
  if (record.status === 'processing') {
    await imports(db).updateOne(
      { _id: record._id },
      { $set: { status: 'failed', failure: reason.slice(0, 300), updated_at: new Date() } },
    );
  }
  if (record.stage === 'queued') return;
  // Contacts first: a key freed while its contact still stood could let another import add a twin.
  await contactsCollection(db).deleteMany({ import_id: record._id });
  await contactKeysCollection(db).deleteMany({ import_id: record._id });
}
