// Contacts synced from Clio or RingCentral, the worker side (docs/contacts.md#synced-from-clio,
// docs/ringcentral.md#contacts-sync): the sync's job reads the firm's contacts page by page from
// its source (sync-sources.ts: Clio's cursor paging, RingCentral's FSync pages or ISync), and
// stores each page's rows through the contacts import itself (import-rows.ts: the same parse,
// the same claims on phone and email, the same counts). Page n is the import `<job_id>.p<n>`:
// its record and staged rows are written before it runs, then the sync's record is moved on
// (the next page's URL, pages + 1, the counts plus the page's) in one write.
//
// A worker killed anywhere in this: the job is retried and starts from the record, so from the
// first page not yet counted. Once that page's rows were staged, the record also keeps the link
// after it (`current`), and the stored import is run again without reading Clio (a finished
// import answers its stored result: counted once, never twice; an unfinished one is retried
// with the same contact ids and its own claims recognised, import-rows.ts). Before that, the page
// is read from Clio again. A sync waiting for the firm's turn resumes the same way.
//
// Bounds (docs/contacts.md#limits): the listing is the firm's to serve (its base URL), and may
// never end. A sync reads at most CONTACTS_SYNC_MAX_ROWS rows (the last page cut to them) and
// CONTACTS_SYNC_MAX_PAGES pages, and runs at most CONTACTS_SYNC_MAX_MS from its start; past any
// of them it stops `failed`, what it stored kept. And it holds a worker's contacts slot for at
// most CONTACTS_SYNC_SLICE_PAGES pages at a time: then the job goes to the back of the queue
// (SyncSliceEnded) and other firms' imports and syncs waiting there run first.
import { randomBytes } from 'node:crypto';
import type { Services } from '../../wiring/services.js';
import { CrmError } from '../../integrations/crm/clio.js';
import { planExternalKeys } from './external-keys.js';
import { syncSourceReader } from './sync-sources.js';
import {
  completeContactSync,
  countedSync,
  pageImportId,
  syncPageMoves,
  syncsCollection,
  type ContactSyncDoc,
} from './contact-sync.js';
import { importsCollection, stagedAs, type ImportResult } from './import-record.js';
import { ImportNotRunnableError, runContactImport } from './import-rows.js';
import { recordSyncCompleted } from './record-contacts-events.js';
import { discardImportRows, readImportRows, splitImportRows, stageImportRows } from './import-staging.js';
import type { SyncContactsJob } from '../../../jobs/contacts.js';
import { claim } from '../../platform/db/claim.js';
import { RecordBusyError } from '../../platform/redis-mutex.js';

export { CLIO_SYNC_PAGE_SIZE } from './sync-sources.js';

/** The sync cannot run: its record is gone or belongs elsewhere, or it already ended. */
export class SyncNotRunnableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SyncNotRunnableError';
  }
}

async function runnableSync(services: Services, job: SyncContactsJob): Promise<ContactSyncDoc> {
  const stored = await syncsCollection(services.mongo.db).findOne({ _id: job.syncId });
  if (stored === null || stored.firm !== job.firm) {
    throw new SyncNotRunnableError(`no contacts sync ${job.syncId} for firm ${job.firm}`);
  }
  // From the newest page counted (the stored record may be behind it: countedSync).
  const sync = await countedSync(services.mongo.db, stored);
  if (sync.status === 'failed') throw new SyncNotRunnableError(`contacts sync ${job.syncId} was given up`);
  return sync;
}

/**
 * Stores page n's rows as its import unless an earlier attempt, or another runner of the sync,
 * did (its record then decides: the rows it staged are the ones imported). True when this call
 * stored it. Rows are staged before the record is written, so a record always has its rows.
 *
 * Two runners of one sync (a job taken over from a worker still alive) can prepare the same page
 * at once. Each stages the rows under a name of its own (`<import>~<random>`), then inserts the
 * record naming it (rows_at): the insert is a claim, so one record is stored, and the loser
 * deletes only its own rows — never rows the winner's import is about to read. The loser plans
 * the external keys again from the winner's rows, in case its own read of the page differed.
 */
async function preparePage(
  services: Services,
  sync: ContactSyncDoc,
  importId: string,
  rows: Record<string, unknown>[],
): Promise<boolean> {
  const db = services.mongo.db;
  if ((await importsCollection(db).findOne({ _id: importId })) !== null) return false;
  const parts = splitImportRows(rows);
  // Which contact each record becomes, before any is stored (a later change or removal finds it).
  await planExternalKeys(db, sync.firm, importId, rows);
  const rowsAt = `${importId}~${randomBytes(6).toString('base64url')}`;
  await stageImportRows(db, { importId: rowsAt, firm: sync.firm }, parts);
  const now = new Date();
  const stored = await claim(importsCollection(db), {
    _id: importId,
    firm: sync.firm,
    status: 'processing',
    stage: 'queued',
    rows: rows.length,
    chunks: parts.length,
    rows_at: rowsAt,
    default_country: sync.default_country,
    sync_id: sync._id,
    result: null,
    failure: null,
    created_at: now,
    updated_at: now,
    completed_at: null,
  });
  if (stored) return true;
  await discardImportRows(db, rowsAt, parts.length);
  const record = await importsCollection(db).findOne({ _id: importId });
  const theirs = record === null ? null : await readImportRows(db, stagedAs(record), record.chunks ?? 0);
  // Gone when the winner's import has completed: its contacts exist, and planning skips those.
  if (theirs !== null) await planExternalKeys(db, sync.firm, importId, theirs as Record<string, unknown>[]);
  return false;
}

/** Runs page n's import (the stored result when it already finished). */
async function runPageImport(
  services: Services,
  sync: ContactSyncDoc,
  importId: string,
): Promise<ImportResult> {
  try {
    return await runContactImport(services, {
      importId,
      firm: sync.firm,
      defaultCountry: sync.default_country,
    });
  } catch (err) {
    if (err instanceof ImportNotRunnableError) throw new CrmError(err.message, true, false);
    throw err;
  }
}

/** The sync read its slice of pages: the caller puts it at the back of the queue (no attempt spent). */
export class SyncSliceEnded extends Error {
  constructor(readonly pages: number) {
    super(`contacts sync paused after ${pages} pages: back of the queue`);
    this.name = 'SyncSliceEnded';
  }
}

const counted = (sync: ContactSyncDoc): number => sync.imported + sync.duplicates + sync.errors;
const thousands = (n: number): string => n.toLocaleString('en-US');

/** Why the sync must stop before reading another page (its bounds), or null. */
function boundReached(services: Services, sync: ContactSyncDoc): string | null {
  const { contactsSyncMaxRows: rows, contactsSyncMaxPages: pages, contactsSyncMaxMs: ms } = services.config;
  const stop = 'The sync stopped: one sync reads';
  if (counted(sync) >= rows) return `${stop} at most ${thousands(rows)} contacts, and Clio had more.`;
  if (sync.pages >= pages) return `${stop} at most ${thousands(pages)} pages, and Clio had more.`;
  if (Date.now() - sync.started_at.getTime() >= ms) {
    const seconds = Math.round(ms / 1000);
    return `${stop} for at most ${thousands(seconds)} second${seconds === 1 ? '' : 's'}, and Clio had more.`;
  }
  return null;
}

const NO_ROWS: ImportResult = { imported: 0, duplicates: 0, errors: 0, error_rows: [] };

/**
 * Runs a sync from where its record says to its end. Throws RecordBusyError while an import of
 * the firm holds the firm's turn (the caller delays the job; it resumes at the same page), a
 * CrmError when Clio fails or refuses, SyncNotRunnableError when there is nothing to run.
 */
export async function runContactSync(services: Services, job: SyncContactsJob): Promise<ContactSyncDoc> {
  const db = services.mongo.db;
  let sync = await runnableSync(services, job);
  if (sync.status === 'completed') {
    await completeContactSync(db, sync);
    await recordSyncCompleted(services, sync._id);
    return sync;
  }
  const reader = await syncSourceReader(services, sync);
  let slice = 0;
  for (;;) {
    // No link after the last page counted: the listing ended there. (Also when the runner that
    // counted it died before completing the sync: its retry completes it, reading nothing again.)
    if (sync.pages > 0 && sync.page_url === null) break;
    const importId = pageImportId(sync._id, sync.pages);
    let next: string | null;
    let token = sync.sync_token;
    let deleted = 0;
    let updated = 0;
    let result = NO_ROWS;
    const staged =
      sync.current?.page === sync.pages ? await importsCollection(db).findOne({ _id: importId }) : null;
    if (staged !== null && sync.current !== undefined) {
      // Staged by an earlier attempt: its stored rows are imported, the page is not read again.
      next = sync.current.next;
      if (sync.current.token !== undefined) token = sync.current.token;
      result = await runPageImport(services, sync, importId);
    } else {
      const bound = boundReached(services, sync);
      if (bound !== null) throw new CrmError(bound, true, false);
      if (slice >= services.config.contactsSyncSlicePages) throw new SyncSliceEnded(slice);
      const page = await reader.read(sync, sync.page_url ?? reader.first(sync));
      next = page.next;
      if (page.token !== undefined) token = page.token;
      deleted = page.deleted;
      updated = page.updated;
      // No more rows than the sync's bound leaves (the bound then stops it before the next page).
      const rows = page.rows.slice(0, Math.max(0, services.config.contactsSyncMaxRows - counted(sync)));
      slice += 1;
      if (rows.length > 0 || (await importsCollection(db).findOne({ _id: importId })) !== null) {
        // The link after the page is kept by the runner that stored it: a runner that found the
        // page stored (another's, or its own before a crash) does not write the record here.
        if (await preparePage(services, sync, importId, rows)) {
          sync = {
            ...sync,
            current: { page: sync.pages, next, ...(page.token === undefined ? {} : { token: page.token }) },
          };
          await syncsCollection(db).updateOne({ _id: sync._id }, { $set: { current: sync.current } });
        }
        result = await runPageImport(services, sync, importId);
      }
    }
    const moved: ContactSyncDoc = {
      ...sync,
      page_url: next,
      pages: sync.pages + 1,
      imported: sync.imported + result.imported,
      duplicates: sync.duplicates + result.duplicates,
      errors: sync.errors + result.errors,
      ...(sync.source === 'ringcentral'
        ? {
            sync_token: token ?? null,
            deleted: (sync.deleted ?? 0) + deleted,
            updated: (sync.updated ?? 0) + updated,
          }
        : {}),
      updated_at: new Date(),
    };
    // A page is counted by a claim holding the record after it: two runners of one sync (a job
    // taken over from a worker that was still alive) never both count it. The one that loses
    // leaves the sync to the other and writes nothing: what the sync stands at is read from the
    // claims (countedSync), so a runner that died between its claim and its write, or a write
    // that lands late, loses no page and counts none twice.
    if (!(await claim(syncPageMoves(db), { _id: `${sync._id}|${sync.pages}`, moved }))) {
      throw new RecordBusyError(`contact sync ${sync._id}`);
    }
    // The stored record follows the claims (a hint for readers; countedSync is the answer).
    await syncsCollection(db).replaceOne({ _id: sync._id }, moved);
    sync = moved;
  }
  await completeContactSync(db, sync);
  await recordSyncCompleted(services, sync._id);
  return { ...sync, status: 'completed' };
}
