// Contacts import (CONTRACT §3.7): the request stores an import record and enqueues one job
// with the rows; a worker classifies every row as imported, duplicate or error, and the
// request waits for the result (CONTACTS_IMPORT_WAIT_MS), else answers 202 with the job_id.
//
// How a phone or an email stays with one contact of a firm, on FerretDB too: key documents
// `<firm>|phone|<E.164>` / `<firm>|email|<address>` claimed by insertMany (unordered, in
// batches): a duplicate-key error is the answer "held already", with no lookup first and no
// query over the contacts. Rows are then classified in order, as if imported one at a time:
// a row is imported when every key it has was claimed by this import and no earlier row of
// the request took it; otherwise it is a duplicate (of an existing contact, or of an earlier
// imported row). Keys claimed for rows that turned out duplicates are released; a key first
// proposed for a row that turned out a duplicate is handed to the row that took it.
//
// Imports of one firm take turns (a Redis lock per firm, renewed while held, waited for by
// delaying the job): two imports with the same contact could otherwise each claim one of its
// keys, each find the other key held and each call it a duplicate — no contact at all. The
// claims, not the lock, are what keep a phone or email with one contact.
//
// A crash mid-import: the job is retried, and the retry does the same work again. Contact ids
// are derived from the import and the row, so inserting them again changes nothing; keys this
// import claimed before the crash are recognised as its own (the retry reads the key documents
// it could not claim, by _id, only when the record says claiming had begun); the classification
// is the same, so is the summary. A finished import answers its stored result. An import whose
// every attempt failed is rolled back (its contacts and claims removed) and reported `failed`.
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

/** Rows one request may carry (CONTRACT §3.7); more is 413 too_many_rows, nothing imported. */
export const MAX_IMPORT_ROWS = 5000;
/** error_rows lists at most this many rows (the first ones). */
const MAX_ERROR_ROWS = 100;
/** Point reads and writes in flight at once (re-run read-back, releases, hand-overs, rollback). */
const POINT_CONCURRENCY = 8;
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The import's result once its job has finished, waiting up to `waitMs` (point reads by _id,
 * backing off to 250 ms); null when it is still processing then, or the client has gone.
 * A failed import is a 503: it was rolled back, nothing was imported, and it may be sent again.
 */
export async function awaitContactImport(
  db: Db,
  importId: string,
  waitMs: number,
  clientGone: () => boolean,
): Promise<ImportResult | null> {
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
  // leaves the record processing: BullMQ knows.
  const gone = await jobGaveUp(services, importId);
  if (gone !== null) return { job_id: record._id, status: 'failed', message: failedMessage(gone) };
  return { job_id: record._id, status: 'processing' };
}

const failedMessage = (failure: string | null) =>
  `The import failed (${failure ?? 'unknown error'}); send it again.`;

async function jobGaveUp(services: Services, importId: string): Promise<string | null> {
  try {
    const job = await services.queues[JOBS.importContacts.queue].getJob(importId);
    if (job === undefined) return 'its job is no longer queued';
    return (await job.getState()) === 'failed' ? (job.failedReason ?? 'its job failed') : null;
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
  /** Each key of the request, with the first row that has it and the key document to claim. */
  keyDocs: ContactKeyDoc[];
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
          created_at: createdAt,
        });
      }
    }
    candidates.push({ index, contactId, fields: parsed.fields, keys });
  });
  return { errorRows, candidates, keyDocs: [...keyDocs.values()] };
}

/** Rows in order, as if one at a time: imported when all its keys are this import's and still free. */
function classify(
  candidates: PlannedRow[],
  ours: ReadonlyMap<string, string>,
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

async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
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
  // Claim every key of the request; a taken one answers with its duplicate-key error.
  const claimed = await claimMany(keys, plan.keyDocs);
  /** Keys this import holds, with the contact each key document names now. */
  const ours = new Map<string, string>();
  for (const doc of plan.keyDocs) if (claimed.has(doc._id)) ours.set(doc._id, doc.contact_id);
  if (retry) {
    // Only after a crash: which of the taken keys did this import claim before it?
    const taken = plan.keyDocs.filter((doc) => !claimed.has(doc._id));
    await forEachLimited(taken, POINT_CONCURRENCY, async (doc) => {
      const held = await keys.findOne({ _id: doc._id });
      if (held?.import_id === record._id) ours.set(doc._id, held.contact_id);
    });
  }
  const { imported, duplicates, owner } = classify(plan.candidates, ours);
  // Keys of rows that turned out duplicates go back; keys first proposed for such a row go to
  // the row that took them. Both are point writes by _id, and rare.
  const fixes = [...ours].filter(([key, contactId]) => owner.get(key) !== contactId);
  await forEachLimited(fixes, POINT_CONCURRENCY, async ([key]) => {
    const contactId = owner.get(key);
    if (contactId === undefined) await keys.deleteOne({ _id: key });
    else await keys.updateOne({ _id: key }, { $set: { contact_id: contactId } });
  });
  const contacts: ContactDoc[] = imported.map((row) => ({
    _id: row.contactId,
    firm: record.firm,
    ...row.fields,
    search_terms: contactSearchTerms(row.fields),
    import_id: record._id,
    created_at: record.created_at,
  }));
  // Contact ids are the import's own: one already there was inserted by an earlier attempt.
  await claimMany(contactsCollection(db), contacts);
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
 * The job's last attempt failed: the import is marked failed, then what it wrote is removed —
 * its contacts, and the key documents it holds — so a later import of the same rows finds them
 * free. Best effort (the store may be what failed); point reads and deletes by _id.
 */
export async function failContactImport(
  services: Services,
  job: ImportContactsJob,
  reason: string,
): Promise<void> {
  const db = services.mongo.db;
  const record = await imports(db).findOne({ _id: job.importId });
  if (record === null || record.firm !== job.firm || record.status !== 'processing') return;
  await imports(db).updateOne(
    { _id: record._id },
    { $set: { status: 'failed', failure: reason.slice(0, 300), updated_at: new Date() } },
  );
  if (record.stage === 'queued') return;
  const plan = planImport(job, countryOf(job), record.created_at);
  const keys = contactKeysCollection(db);
  // Contacts first: a key freed while its contact still stood could let another import add a twin.
  await forEachLimited(plan.candidates, POINT_CONCURRENCY, async (row) => {
    await contactsCollection(db).deleteOne({ _id: row.contactId });
  });
  await forEachLimited(plan.keyDocs, POINT_CONCURRENCY, async (doc) => {
    const held = await keys.findOne({ _id: doc._id });
    if (held?.import_id === record._id) await keys.deleteOne({ _id: doc._id });
  });
}
