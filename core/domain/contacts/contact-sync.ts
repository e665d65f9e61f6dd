// Contacts synced from Clio or RingCentral, the request side and the record
// (docs/contacts.md#synced-from-clio, docs/ringcentral.md#contacts-sync). POST /api/contacts/sync
// claims the firm's sync of that source (an insert of `<firm>|<source>` into contact_sync_claims:
// one sync per firm and source at a time), stores the sync's record and enqueues its
// job; the job (contact-sync-pages.ts) reads Clio page by page and writes its progress to the
// record after each page; the claim is deleted when the sync ends. GET reads the record.
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { claim } from '../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { conflict } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { FirmDoc } from '../firms/firms.js';
import { clioConnected } from '../crm/firm-clio-client.js';
import { readRingCentralConnection } from '../phone/ringcentral-connection.js';
import { failContactImport, importsCollection, jobGaveUp } from './import-record.js';
import { replaceById } from '../../platform/db/upsert.js';

export type SyncStatus = 'running' | 'completed' | 'failed';
export type SyncSource = 'clio' | 'ringcentral';

export interface ContactSyncDoc {
  /** The job_id. */
  _id: string;
  firm: string;
  source: SyncSource;
  status: SyncStatus;
  default_country: string;
  /** Clio's updated_since for this run: the start of the firm's last completed sync; null reads all. */
  updated_since: Date | null;
  /**
   * The page to read next, null before the first: Clio's meta.paging.next of the last page done;
   * for RingCentral `fsync:<pageId>` or `isync:<syncToken>` (ringcentral-sync-source.ts).
   */
  page_url: string | null;
  /** RingCentral: the ISync token the next sync starts from (FSync: its first page's; ISync: the last page's). */
  sync_token?: string | null;
  /** Contacts the source said were removed, marked deleted_at (RingCentral ISync). */
  deleted?: number;
  /** Contacts the source said changed, updated in place (RingCentral ISync). */
  updated?: number;
  /** Pages done; page n is imported as the import `<job_id>.p<n>` (contact-sync-pages.ts). */
  pages: number;
  /**
   * The page being imported (its number) and the link after it, kept once its rows are staged:
   * a retry waiting for the firm's turn, or after a crash, need not read that page from Clio again.
   */
  current?: { page: number; next: string | null; token?: string | null };
  imported: number;
  duplicates: number;
  errors: number;
  failure: string | null;
  started_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

interface SyncClaimDoc {
  /** `<firm>|<source>`. */
  _id: string;
  sync_id: string;
  created_at: Date;
}

interface SyncMarkDoc {
  /** `<firm>|<source>`. */
  _id: string;
  sync_id: string;
  /** When the last completed sync started: every contact changed since is read by the next. */
  started_at: Date;
  /** RingCentral: the ISync token the next sync starts from. */
  sync_token?: string | null;
}

export const syncsCollection = (db: Db) => collection<ContactSyncDoc>(db, COLLECTIONS.contactSyncs);
const claims = (db: Db) => collection<SyncClaimDoc>(db, COLLECTIONS.contactSyncClaims);
const marks = (db: Db) => collection<SyncMarkDoc>(db, COLLECTIONS.contactSyncMarks);
const claimId = (firm: string, source: SyncSource) => `${firm}|${source}`;

/**
 * Claims: the sync's record after each of its pages (`<sync>|<page>`), inserted by the runner that
 * counted the page (contact-sync-pages.ts), never changed after.
 */
export const syncPageMoves = (db: Db) =>
  collection<{ _id: string; moved: ContactSyncDoc }>(db, COLLECTIONS.contactSyncPages);
/** Claims: a sync's completion (`_id` = the sync's id) with its time, the first completer's. */
const completions = (db: Db) => collection<{ _id: string; at: Date }>(db, COLLECTIONS.contactSyncCompletions);

/**
 * The sync as its claims say: the stored record moved on to the newest page counted after it, and
 * completed once its completion was claimed. The stored record can be behind them: written by
 * two runners of one sync (a job taken over from a worker still alive), one's write of an older
 * page may land after the other's newer one or after its completion — FerretDB has no write
 * that is conditional and atomic — and a runner can die between its claim and its write. The
 * claims are never undone, so GET, a resumed runner and the completion event read this. One
 * point read per page the record is behind (a miss when it is not), one more while it is running.
 *
 * The completion is read before the pages. A runner claims the last page, then the completion;
 * so a completion read first has every page's claim behind it, and the walk finds them all.
 * Read after the walk, a runner that counted the last page and completed the sync between the
 * two reads made the answer "completed" with that page left out: a GET polled at that moment
 * said completed with 24 of 25 pages, and completed is final.
 */
export async function countedSync(db: Db, stored: ContactSyncDoc): Promise<ContactSyncDoc> {
  const completed = stored.status === 'completed' ? null : await completions(db).findOne({ _id: stored._id });
  let sync = stored;
  for (;;) {
    const after = await syncPageMoves(db).findOne({ _id: `${stored._id}|${sync.pages}` });
    if (after === null) break;
    sync = after.moved;
  }
  if (stored.status === 'completed') {
    return { ...sync, status: 'completed', completed_at: stored.completed_at, updated_at: stored.updated_at };
  }
  if (completed !== null) return { ...sync, status: 'completed', completed_at: completed.at };
  if (stored.status === 'failed') return { ...sync, status: 'failed', failure: stored.failure };
  return sync;
}

/**
 * How far before the last completed sync's start the next one asks Clio for changes: Clio's clock
 * and ours may differ a little, and a contact read twice is only a duplicate.
 */
export const UPDATED_SINCE_MARGIN_MS = 5 * 60_000;

const syncRunning = (syncId: string) =>
  conflict(
    'sync_running',
    `A contacts sync of this firm is running already (job_id ${syncId}); wait for it to finish (GET /api/contacts/sync/${syncId}).`,
  );

/**
 * Claims the firm's sync for `syncId`, whose record is stored already; a claim left by a sync that
 * has ended is taken over once. A claim always names a stored record (the record is written
 * before its claim): one whose record is missing was let go by a start that failed.
 */
async function claimSync(db: Db, firm: string, source: SyncSource, syncId: string): Promise<void> {
  const doc = { _id: claimId(firm, source), sync_id: syncId, created_at: new Date() };
  if (await claim(claims(db), doc)) return;
  const held = await claims(db).findOne({ _id: claimId(firm, source) });
  const stored = held === null ? null : await syncsCollection(db).findOne({ _id: held.sync_id });
  const holder = stored === null ? null : await countedSync(db, stored);
  if (held !== null && holder?.status === 'running') throw syncRunning(held.sync_id);
  // The holder ended (its process died between its last write and the claim's delete) or the
  // claim was let go meanwhile: delete that claim and try once more. Two requests doing this at
  // once still get one claim: the insert decides.
  if (held !== null) await claims(db).deleteOne({ _id: held._id, sync_id: held.sync_id });
  if (!(await claim(claims(db), doc))) {
    const now = await claims(db).findOne({ _id: claimId(firm, source) });
    throw syncRunning(now?.sync_id ?? 'unknown');
  }
}

/** Lets the firm's claim go, if `syncId` holds it. Safe to repeat. */
export async function releaseSyncClaim(
  db: Db,
  firm: string,
  syncId: string,
  source: SyncSource = 'clio',
): Promise<void> {
  await claims(db).deleteOne({ _id: claimId(firm, source), sync_id: syncId });
}

/** 409 unless the firm's source can be read now. */
async function requireSource(services: Services, firm: FirmDoc, source: SyncSource): Promise<void> {
  if (source === 'ringcentral') {
    const conn = await readRingCentralConnection(services.mongo.db, firm._id);
    if (conn === null || conn.status !== 'connected') {
      throw conflict(
        'phone_system_not_connected',
        conn === null
          ? 'This firm has no RingCentral connection: connect RingCentral (POST /api/integrations/ringcentral/connect), then sync.'
          : 'RingCentral refused to renew this firm’s access: connect RingCentral again (POST /api/integrations/ringcentral/connect), then sync.',
      );
    }
    return;
  }
  if (!clioConnected(firm)) {
    throw conflict(
      'crm_not_connected',
      firm.settings.crm.provider === 'clio'
        ? 'Clio refused to renew this firm’s access: connect Clio again (GET /api/integrations/clio/connect), then sync.'
        : 'This firm has no Clio connection: connect Clio (GET /api/integrations/clio/connect), then sync.',
    );
  }
}

/**
 * Starts a sync of the firm's contacts from `source`: 409 crm_not_connected without a usable Clio
 * connection (409 phone_system_not_connected without RingCentral), 409 sync_running while one
 * runs. Returns the job_id.
 */
export async function startContactSync(
  services: Services,
  firm: FirmDoc,
  country: string,
  source: SyncSource = 'clio',
): Promise<string> {
  await requireSource(services, firm, source);
  const db = services.mongo.db;
  const syncId = newId('csy');
  const mark = await marks(db).findOne({ _id: claimId(firm._id, source) });
  const now = new Date();
  // The record before the claim: a request that finds the firm's turn taken reads the holder's
  // record to tell a running sync from one that ended. Claimed first, a sync whose record was
  // still on its way looked ended, and a second request started at the same moment took the turn
  // over: two syncs of one firm ran, both answered 202.
  await syncsCollection(db).insertOne({
    _id: syncId,
    firm: firm._id,
    source,
    status: 'running',
    default_country: country,
    updated_since: mark === null ? null : new Date(mark.started_at.getTime() - UPDATED_SINCE_MARGIN_MS),
    page_url: null,
    ...(source === 'ringcentral' ? { sync_token: mark?.sync_token ?? null, deleted: 0, updated: 0 } : {}),
    pages: 0,
    imported: 0,
    duplicates: 0,
    errors: 0,
    failure: null,
    started_at: now,
    updated_at: now,
    completed_at: null,
  });
  try {
    await claimSync(db, firm._id, source, syncId);
  } catch (err) {
    // Refused (409) or not claimed (503): a record no claim names, that no job runs, is not kept.
    await syncsCollection(db)
      .deleteOne({ _id: syncId })
      .catch(() => {});
    throw err;
  }
  try {
    await enqueue(services.queues, JOBS.syncContacts, { syncId, firm: firm._id });
  } catch (err) {
    // Not accepted (503): neither the claim nor the record may stay.
    await releaseSyncClaim(db, firm._id, syncId, source).catch(() => {});
    await syncsCollection(db)
      .deleteOne({ _id: syncId })
      .catch(() => {});
    throw err;
  }
  return syncId;
}

/**
 * The sync has read its last page (`sync`: the record after it): completed, the next run's
 * updated_since, the claim let go.
 */
export async function completeContactSync(db: Db, sync: ContactSyncDoc): Promise<void> {
  // The mark first: once GET shows the sync completed (its completion claim), a sync started at
  // once reads changes since this one. Every page is counted by now, so a mark written by a runner
  // that dies before the claim is still true; its retry completes the sync.
  await replaceById(marks(db), claimId(sync.firm, sync.source), {
    sync_id: sync._id,
    started_at: sync.started_at,
    ...(sync.source === 'ringcentral' ? { sync_token: sync.sync_token ?? null } : {}),
  });
  if (sync.status !== 'completed') {
    const now = new Date();
    // Two workers can finish the same sync (a job taken over from a killed one): the completion is
    // claimed, and both write the first completer's time (its contacts.sync.completed carries it).
    const at = (await claim(completions(db), { _id: sync._id, at: now }))
      ? now
      : ((await completions(db).findOne({ _id: sync._id }))?.at ?? now);
    // The whole record after the last page: a stored one left behind is brought up with it.
    await syncsCollection(db).replaceOne(
      { _id: sync._id },
      { ...sync, status: 'completed', completed_at: at, updated_at: now },
    );
  }
  await releaseSyncClaim(db, sync.firm, sync._id, sync.source);
}

/**
 * The sync failed for good (its job's last attempt, a refusal that cannot pass, or BullMQ gave
 * the job up): marked failed, the page it was importing rolled back (pages done stay: their
 * contacts are stored and counted), the claim let go. Best effort; safe to repeat. Returns the
 * sync as it now stands: completed, and left so, when a runner completed it meanwhile (its job
 * may then have left BullMQ's history before the caller asked for it), else failed.
 */
export async function failContactSync(
  services: Services,
  sync: ContactSyncDoc,
  reason: string,
): Promise<ContactSyncDoc> {
  const db = services.mongo.db;
  // As the claims say: a sync another runner completed is not failed by a late one, and the page
  // rolled back is the one after the newest counted.
  sync = await countedSync(db, sync);
  if (sync.status === 'completed') return sync;
  const failed: ContactSyncDoc =
    sync.status === 'failed' ? sync : { ...sync, status: 'failed', failure: reason.slice(0, 300) };
  if (sync.status === 'running') {
    await syncsCollection(db).updateOne(
      { _id: sync._id },
      { $set: { status: 'failed', failure: failed.failure, updated_at: new Date() } },
    );
  }
  const page = await importsCollection(db).findOne({ _id: pageImportId(sync._id, sync.pages) });
  if (page !== null) await failContactImport(services, { importId: page._id, firm: page.firm }, reason);
  await releaseSyncClaim(db, sync.firm, sync._id, sync.source);
  return failed;
}

/** The import that stores page `n` of a sync (its contacts' ids derive from it). */
export const pageImportId = (syncId: string, n: number): string =>
  `imp_${syncId.replace(/^csy_/, 's')}.p${n}`;

/**
 * GET /api/contacts/sync/{job_id}: the sync as its claims say (countedSync); a running sync whose
 * job BullMQ gave up is failed here. The claims are read again after the job's state
 * (failContactSync): a job that completed the sync and left BullMQ's history (it keeps the last
 * 20) after they were first read is not gone.
 */
export async function contactSyncState(services: Services, stored: ContactSyncDoc): Promise<ContactSyncDoc> {
  const sync = await countedSync(services.mongo.db, stored);
  if (sync.status !== 'running') return sync;
  const gone = await jobGaveUp(services, sync._id);
  if (gone === null) return sync;
  return failContactSync(services, sync, gone);
}
