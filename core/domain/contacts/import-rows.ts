// Contacts import, the worker side: one job classifies every row of an import
// as imported, duplicate or error and stores the result on the import record (import-record.ts).
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
// Why inserts and not reads: a claim's duplicate-key error is the answer, one round trip per
// batch of 500 keys with no lookup first. FerretDB 1.24 on PostgreSQL serves a point read,
// update or delete by _id only through the GIN index the local harness gives every table
// (scripts/local/services.ts: FERRETDB_ID_GIN_SQL), and answers `_id: {$in}` by reading every
// document itself (seconds). So the common path only inserts; the rare releases are deleted per
// claim batch (settleKeys), and a retry reads its own claims back with one equality query.
//
// Imports of one firm take turns (a Redis lock per firm, renewed while held, waited for by
// delaying the job): two imports with the same contact could otherwise each claim one of its
// keys, each find the other key held and each call it a duplicate — no contact at all. The
// claims, not the lock, are what keep a phone or email with one contact.
//
// The rows are read from where the request staged them (import-staging.ts) and deleted, with
// the firm's pending slot given back (import-slots.ts), once the import has completed.
//
// A crash mid-import: the job is retried, and the retry does the same work again. Contact ids
// are derived from the import and the row, so inserting them again changes nothing; keys this
// import claimed before the crash are recognised as its own (import_id; read back only when the
// record says claiming had begun); the classification is the same, so is the summary. A finished
// import answers its stored result. An import whose every attempt failed is rolled back (its
// contacts and claims removed: import-record.ts) and reported `failed`. A retry never takes the
// firm's turn over from the attempt it follows: it waits until that attempt let it go, or its
// lock lapsed (CONTACTS_IMPORT_LOCK_MS after a dead attempt's last renewal). A killed worker's last writes
// can still be under way in the store for a moment after it died; a retry that claimed,
// classified and released keys meanwhile would have one of those late claims land after its
// release, a key left naming a contact never written.
//
// Another import may take the firm's turn between a failed or killed attempt and its retry (the
// retry waits for its backoff, or for the dead attempt's lock to lapse). The unfinished import
// still holds claims, among them some for its duplicate rows that its retry will release: counted
// against those, the other import's rows would be duplicates of no contact at all. So each import
// names itself the firm's claiming import (in Redis) before it claims, and one that finds another
// import named there, unfinished, steps aside until that one's retry has run — or, when its job
// was given up, rolls it back (import-record.ts) and goes on. A named import that failed is rolled
// back again (safe to repeat): a rollback cut short would otherwise leave its claims for good.
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { claimMany } from '../../platform/db/claim.js';
import { RecordBusyError, withRecordLock } from '../../platform/redis-mutex.js';
import type { ImportContactsJob } from '../../../jobs/contacts.js';
import { isKnownCountry, type CountryCode } from '../contact-points/phones.js';
import { discardImportRows, readImportRows } from './import-staging.js';
import { releaseImportSlot } from './import-slots.js';
import { parseContactRow, type ContactFields } from './contact-row.js';
import {
  contactKeyId,
  contactKeysCollection,
  contactsCollection,
  type ContactDoc,
  type ContactKeyDoc,
  type ContactKeyKind,
} from './contacts.js';
import {
  failContactImport,
  importsCollection,
  jobGaveUp,
  stagedAs,
  type ContactImportDoc,
  type ImportErrorRow,
  type ImportResult,
} from './import-record.js';
import { contactSearchTerms } from './search-terms.js';

/** error_rows lists at most this many rows (the first ones). */
const MAX_ERROR_ROWS = 100;
/** Key documents per insertMany; their releases are deleted batch by batch. */
const CLAIM_BATCH = 500;
/** How long the name of the firm's claiming import is kept (a week, as failed jobs are). */
const CLAIMING_TTL_MS = 7 * 24 * 3600_000;

/** The job cannot run: its record is gone, belongs elsewhere or was given up (the job must not retry). */
export class ImportNotRunnableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportNotRunnableError';
  }
}

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
export const contactIdOf = (importId: string, index: number): string =>
  `ct_${importId.replace(/^imp_/, '')}_${String(index).padStart(4, '0')}`;

function planImport(
  job: ImportContactsJob,
  rows: unknown[],
  country: CountryCode,
  createdAt: Date,
): ImportPlan {
  const errorRows: ImportErrorRow[] = [];
  const candidates: PlannedRow[] = [];
  const keyDocs = new Map<string, ContactKeyDoc>();
  rows.forEach((row, index) => {
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

function countryOf(job: ImportContactsJob): CountryCode {
  const country = job.defaultCountry.toUpperCase();
  if (!isKnownCountry(country)) throw new ImportNotRunnableError(`unknown default country ${country}`);
  return country;
}

async function runnableRecord(db: Db, job: ImportContactsJob): Promise<ContactImportDoc> {
  const record = await importsCollection(db).findOne({ _id: job.importId });
  if (record === null || record.firm !== job.firm) {
    throw new ImportNotRunnableError(`no import record ${job.importId} for firm ${job.firm}`);
  }
  if (record.status === 'failed') throw new ImportNotRunnableError(`import ${job.importId} was given up`);
  return record;
}

/**
 * The import's rows: staged by the request (or, on a job from before staging, in the job); null
 * when they are gone (let go by a run that completed the import, or by its rollback).
 */
async function rowsOf(db: Db, job: ImportContactsJob, record: ContactImportDoc): Promise<unknown[] | null> {
  if (job.rows !== undefined) return job.rows;
  return readImportRows(db, stagedAs(record), record.chunks ?? 0);
}

/** A completed import's staged rows and pending slot are let go (again, after a crash: idempotent). */
async function letGo(services: Services, record: ContactImportDoc): Promise<void> {
  await discardImportRows(services.mongo.db, stagedAs(record), record.chunks ?? 0);
  await releaseImportSlot(services, record.firm, record._id);
}

/**
 * Runs one import job to its result (the stored one when it already finished). Throws
 * RecordBusyError when another import of the firm holds the firm's turn: the caller delays the job.
 */
export async function runContactImport(services: Services, job: ImportContactsJob): Promise<ImportResult> {
  const db = services.mongo.db;
  const first = await runnableRecord(db, job);
  if (first.status === 'completed' && first.result !== null) {
    await letGo(services, first);
    return first.result;
  }
  const rows = await rowsOf(db, job, first);
  if (rows === null) {
    // Another run of the same import (a sync's page run by two runners, a job taken over) may
    // have completed it since the first read and let its rows go: its stored result is the answer.
    const now = await runnableRecord(db, job);
    if (now.status === 'completed' && now.result !== null) return now.result;
    throw new ImportNotRunnableError(`the rows of import ${first._id} are gone`);
  }
  const plan = planImport(job, rows, countryOf(job), first.created_at);
  const result = await withRecordLock(
    services.redis,
    redisKeys(services.config).contactsImportLock(job.firm),
    async () => {
      // Read again inside the firm's turn: an earlier attempt may have finished meanwhile.
      const record = await runnableRecord(db, job);
      if (record.status === 'completed' && record.result !== null) return record.result;
      await settleEarlierImport(services, record);
      return applyPlan(services, record, plan);
    },
    // No owner: a retry waits for the attempt before it (see the top of this file).
    { ttlMs: services.config.contactsImportLockMs, waitMs: 1000, renew: true },
  );
  await letGo(services, first);
  return result;
}

/**
 * In the firm's turn, before `record` claims: the import named the firm's claiming import, when
 * it is another one still claiming (an attempt failed or was killed, its retry to come), is waited
 * for (RecordBusyError: the caller steps aside), or rolled back when its job was given up. One
 * that failed is rolled back again: its rollback may have been cut short (the store failed, or the
 * worker was killed, during it), its claims left with no one to remove them. Then `record` is
 * named there.
 */
async function settleEarlierImport(services: Services, record: ContactImportDoc): Promise<void> {
  const key = redisKeys(services.config).contactsImportClaiming(record.firm);
  const named = await services.redis.get(key);
  if (named !== null && named !== record._id) {
    const earlier = await importsCollection(services.mongo.db).findOne({ _id: named });
    if (earlier !== null && earlier.firm === record.firm && earlier.stage === 'claiming') {
      const ref = { importId: earlier._id, firm: earlier.firm };
      if (earlier.status === 'failed') {
        await failContactImport(services, ref, earlier.failure ?? 'failed');
      } else if (earlier.status === 'processing') {
        const gone = await jobGaveUp(services, earlier.sync_id ?? earlier._id);
        if (gone === null) throw new RecordBusyError(key);
        await failContactImport(services, ref, gone);
      }
    }
  }
  await services.redis.set(key, record._id, 'PX', CLAIMING_TTL_MS);
}

async function applyPlan(
  services: Services,
  record: ContactImportDoc,
  plan: ImportPlan,
): Promise<ImportResult> {
  const db = services.mongo.db;
  const keys = contactKeysCollection(db);
  const retry = record.stage === 'claiming';
  if (!retry) {
    await importsCollection(db).updateOne(
      { _id: record._id },
      { $set: { stage: 'claiming', updated_at: new Date() } },
    );
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
  // The slot is free before anyone can see the import completed: a client that polls it and
  // sends its next import at once is not refused for it. Killed between the two writes, the
  // import is retried without a slot: the firm is over its cap by this one import until then.
  await releaseImportSlot(services, record.firm, record._id);
  const now = new Date();
  await importsCollection(db).updateOne(
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
