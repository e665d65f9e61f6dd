// Contacts import, the request side: the request checks the row count, takes a pending-import
// slot for the size of its staged rows (import-slots.ts), stores an import record and the rows
// (import-staging.ts) and enqueues a job that names them; a worker classifies every row
// (import-rows.ts), and the request waits for the result (CONTACTS_IMPORT_WAIT_MS), else
// answers 202 with the job_id, which GET /api/contacts/import/{job_id} reads.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { serviceUnavailable, tooManyRows } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CountryCode } from '../contact-points/phones.js';
import { discardImportRows, splitImportRows, stageImportRows } from './import-staging.js';
import { releaseImportSlot, stagedBytes, takeImportSlot } from './import-slots.js';
import {
  failContactImport,
  importsCollection,
  jobGaveUp,
  type ContactImportDoc,
  type ImportResult,
} from './import-record.js';

/** Rows one request may carry; more is 413 too_many_rows, nothing imported. */
export const MAX_IMPORT_ROWS = 5000;

/**
 * Stores the import record and its rows and enqueues its job; returns the job_id. 413 over 5,000
 * rows; 429 when the firm's imports waiting would hold too many bytes with this one's staged rows
 * (CONTACTS_IMPORT_MAX_PENDING_BYTES) or are as many as may be (CONTACTS_IMPORT_MAX_PENDING).
 * Accepted whole or not at all: when a step fails, what the earlier ones stored is removed and
 * the error thrown.
 * `rows` is emptied (once counted and split into its staged text).
 */
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
  const count = rows.length;
  const parts = splitImportRows(rows);
  // The parsed rows are emptied out here, the caller's array included: from now on the request
  // holds only their text, and after staging nothing (docs/contacts.md#memory). Letting go of
  // the reference is not enough: an async caller's parameters stay reachable while it waits.
  rows.length = 0;
  await takeImportSlot(services, firm, importId, stagedBytes(parts));
  const now = new Date();
  try {
    // The record first: if this process dies before the job is enqueued, the record (processing,
    // no job) is what the sweep finds and rolls back, staged rows included.
    await importsCollection(db).insertOne({
      _id: importId,
      firm,
      status: 'processing',
      stage: 'queued',
      rows: count,
      chunks: parts.length,
      default_country: country,
      result: null,
      failure: null,
      created_at: now,
      updated_at: now,
      completed_at: null,
    });
    await stageImportRows(db, { importId, firm }, parts);
    await enqueue(services.queues, JOBS.importContacts, { importId, firm, defaultCountry: country });
  } catch (err) {
    // Not accepted (503): no record, rows or slot may claim otherwise.
    await discardImportRows(db, importId, parts.length).catch(() => {});
    await importsCollection(db)
      .deleteOne({ _id: importId })
      .catch(() => {});
    await releaseImportSlot(services, firm, importId).catch(() => {});
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
    const record = await importsCollection(db).findOne({ _id: importId });
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

/**
 * GET /api/contacts/import/{job_id}: the import record (the route has authorized) as it stands; a
 * processing import whose job BullMQ gave up is failed here.
 */
export async function contactImportState(
  services: Services,
  record: ContactImportDoc,
): Promise<ContactImportDoc> {
  if ((record.status === 'completed' && record.result !== null) || record.status === 'failed') return record;
  // A job that died without its processor running to the end (stalled too often, or removed)
  // leaves the record processing: BullMQ knows. Its writes are rolled back here (and by the sweep).
  // The record is read again there, after the job's state: a job that completed the import and
  // then left BullMQ's history (it keeps the last 20) once `record` was read is not gone.
  const gone = await jobGaveUp(services, record.sync_id ?? record._id);
  if (gone === null) return record;
  const now = await failContactImport(services, { importId: record._id, firm: record.firm }, gone);
  return now ?? { ...record, status: 'failed', failure: gone };
}
