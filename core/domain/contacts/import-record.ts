// A contacts import's record, which both sides share: the request stores it
// and reads its result (import-request.ts), the worker fills it in (import-rows.ts). An import
// whose every attempt failed, or whose job BullMQ gave up, is rolled back from here.
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { JOBS } from '../../../jobs/table.js';
import { contactKeysCollection, contactsCollection } from './contacts.js';
import { discardImportRows } from './import-staging.js';
import { releaseImportSlot } from './import-slots.js';

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

export type ImportStatus = 'processing' | 'completed' | 'failed';

export interface ContactImportDoc {
  /** The job_id. */
  _id: string;
  firm: string;
  status: ImportStatus;
  /** queued → claiming (keys may be held by this import: a retry reads back what it cannot claim) → done. */
  stage: 'queued' | 'claiming' | 'done';
  rows: number;
  /**
   * How many pieces its rows are staged in (import-staging.ts); absent on imports from before
   * rows were staged, whose job carries them.
   */
  chunks?: number;
  /**
   * The name its rows are staged under when it is not the import's own id: a sync page's rows
   * are staged under a name of each preparation's own (contact-sync-pages.ts), and the record
   * names the one that was stored.
   */
  rows_at?: string;
  default_country: string;
  /**
   * Set on the import of one page of a contacts sync (contact-sync-pages.ts): it has no job of
   * its own, the sync's job runs it, so that job is the one asked whether it was given up.
   */
  sync_id?: string;
  result: ImportResult | null;
  failure: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export const importsCollection = (db: Db) => collection<ContactImportDoc>(db, COLLECTIONS.contactImports);

/** The name an import's rows are staged under (import-staging.ts). */
export const stagedAs = (record: Pick<ContactImportDoc, '_id' | 'rows_at'>): string =>
  record.rows_at ?? record._id;

/** The import record by job_id, whoever owns it; null when there is none. */
export function findContactImport(db: Db, importId: string): Promise<ContactImportDoc | null> {
  return importsCollection(db).findOne({ _id: importId });
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
  const stale = await importsCollection(services.mongo.db)
    .find({ status: 'processing', updated_at: { $lt: cutoff } })
    .limit(100)
    .toArray();
  let settled = 0;
  for (const record of stale) {
    const gone = await jobGaveUp(services, record.sync_id ?? record._id);
    if (gone === null) continue;
    await failContactImport(services, { importId: record._id, firm: record.firm }, gone);
    settled += 1;
  }
  return settled;
}

export const failedMessage = (failure: string | null) =>
  `The import failed (${failure ?? 'unknown error'}); send it again.`;

/**
 * Why BullMQ gave the job up (an import's, or a contacts sync's: both in the contacts queue, job
 * id = the record's id); null while it may still run (or Redis cannot say).
 */
export async function jobGaveUp(services: Services, jobId: string): Promise<string | null> {
  try {
    // The state alone: nothing else of the job is needed.
    const queue = services.queues[JOBS.importContacts.queue];
    const state = await queue.getJobState(jobId);
    if (state === 'unknown') return 'its job is no longer queued';
    if (state !== 'failed') return null;
    return (await queue.getJob(jobId))?.failedReason ?? 'its job failed';
  } catch {
    // Redis unreachable: the record's own status is the answer.
    return null;
  }
}

/**
 * The import failed for good (its job's last attempt failed, or BullMQ gave the job up): it is
 * marked failed, its staged rows deleted and its pending slot freed, then what it wrote is
 * removed — its contacts, then the key documents it holds — so a later import of the same rows
 * finds them free. One delete each (by _id, or an equality on import_id); safe to repeat. Best
 * effort: the store may be what failed (the firm's next import repeats it: import-rows.ts).
 *
 * Returns the record as it now stands, read here: a completed import is left as it is and
 * returned completed (its job may have finished and left BullMQ's history after the caller read
 * the record processing); null when there is no such import of `ref.firm`.
 */
export async function failContactImport(
  services: Services,
  ref: { importId: string; firm: string },
  reason: string,
): Promise<ContactImportDoc | null> {
  const db = services.mongo.db;
  const record = await importsCollection(db).findOne({ _id: ref.importId });
  if (record === null || record.firm !== ref.firm) return null;
  if (record.status === 'completed') return record;
  // The slot first, as a completed import frees it (import-rows.ts): once the import shows
  // failed, the firm may send the next one at once.
  await releaseImportSlot(services, record.firm, record._id);
  const failed: ContactImportDoc =
    record.status === 'failed' ? record : { ...record, status: 'failed', failure: reason.slice(0, 300) };
  if (record.status === 'processing') {
    await importsCollection(db).updateOne(
      { _id: record._id },
      { $set: { status: 'failed', failure: failed.failure, updated_at: new Date() } },
    );
  }
  await discardImportRows(db, stagedAs(record), record.chunks ?? 0);
  if (record.stage === 'queued') return failed;
  // Contacts first: a key freed while its contact still stood could let another import add a twin.
  await contactsCollection(db).deleteMany({ import_id: record._id });
  await contactKeysCollection(db).deleteMany({ import_id: record._id });
  return failed;
}
