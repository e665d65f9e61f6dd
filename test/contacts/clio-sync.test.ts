// Contacts synced from Clio (docs/contacts.md#synced-from-clio) against the spec-checked Clio
// (test/fakes/clio-server.ts: every request judged by Clio's v4 document, `fields=` included;
// cursor paging whose next links have no `.json`, updated_since, 429 with Retry-After, expiring
// OAuth tokens). A sync of 2,500 Persons over 25 pages whose worker process is SIGKILLed in the
// middle: every contact stored once, the counts those of an import of the same rows; a second
// run reads only what changed. And the answers around it: 409 sync_running, 409
// crm_not_connected, 400 for bad bodies, 403/404 across firms.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clioContactRow } from '../../core/domain/contacts/clio-contact-row.js';
import { contactSyncState, pageImportId } from '../../core/domain/contacts/contact-sync.js';
import { runContactSync, SyncSliceEnded } from '../../core/domain/contacts/contact-sync-pages.js';
import { RecordBusyError } from '../../core/platform/redis-mutex.js';
import { splitImportRows, stageImportRows } from '../../core/domain/contacts/import-staging.js';
import { setFirmCrm } from '../../core/domain/firms/firms.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { ClioListedContact } from '../../core/integrations/crm/clio.js';
import type { Workers } from '../../workers/runner.js';
import { startFakeClio, type ClioContactRecord, type FakeClio } from '../fakes/clio-server.js';
import { registerClioRedirect } from '../integrations/clio-oauth-browser.js';
import { eventually } from '../helpers/eventually.js';
import { readThen } from '../helpers/store-timing.js';
import { eventDocs, eventsOf, rerunCompleted } from '../helpers/events.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { connectClio, finished, startSync } from './clio-support.js';
import { contactKeysOf, contactsOf, expectNoTwins, importRows, importsOf } from './support.js';

let clio: FakeClio;
let stack: Stack;
let workers: Workers | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  clio = await startFakeClio();
  stack = await startStack({
    env: {
      CLIO_CLIENT_ID: clio.oauth.clientId,
      CLIO_CLIENT_SECRET: clio.oauth.clientSecret,
      CLIO_BASE_URL: clio.url,
      // A dead worker's job is taken over after 2 s, and the firm's import turn it held lapses
      // after 4 s.
      JOB_LOCK_MS: '2000',
      CONTACTS_IMPORT_LOCK_MS: '4000',
    },
  });
  registerClioRedirect(clio, stack);
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await workers?.stop();
  await stack?.stop();
  await clio?.close();
});

/** Clio's contact listing, as our first request names it and as its paging links do. */
const LISTING = /^\/api\/v4\/contacts(\.json)?$/;
const DAYS_AGO = new Date(Date.now() - 2 * 86_400_000).toISOString();
const pad = (n: number) => String(n).padStart(4, '0');

/**
 * Person i (0..2499) in Clio, with in every 50: a repeat of the email of the person before
 * (a duplicate), an invalid phone (an error row), a person with neither phone nor email (not a
 * row: nothing to store). Companies in between are not read (the sync asks for Persons).
 */
function seedClio(): void {
  clio.reset();
  let id = 5000;
  for (let i = 0; i < 2500; i++) {
    if (i % 125 === 3) {
      clio.contacts.push({
        id: id++,
        type: 'Company',
        first_name: null,
        last_name: null,
        name: `Company ${i}`,
        email_addresses: [{ name: 'Work', address: `office${i}@co.example`, primary: true }],
        phone_numbers: [],
        updated_at: DAYS_AGO,
      });
    }
    const kind = i % 50;
    const email = kind === 7 ? `person${i - 1}@example.com` : kind === 21 ? null : `person${i}@example.com`;
    const phone = kind === 13 ? '12345' : kind === 21 ? null : `+1415555${pad(i)}`;
    clio.contacts.push({
      id: id++,
      type: 'Person',
      first_name: `First${i}`,
      last_name: `Last${i}`,
      name: `First${i} Last${i}`,
      // Listed as Clio lists them: each with its `primary` flag (v4 EmailAddress, PhoneNumber).
      email_addresses: email === null ? [] : [{ name: 'Home', address: email, primary: true }],
      phone_numbers: phone === null ? [] : [{ name: 'Personal', number: phone, primary: true }],
      updated_at: DAYS_AGO,
    });
  }
}

/** A Clio record as the listing gives it, through the sync's own row mapping. */
function rowOf(c: ClioContactRecord): Record<string, unknown> | null {
  const listed: ClioListedContact = {
    id: c.id,
    type: c.type,
    name: c.name,
    first_name: c.first_name,
    last_name: c.last_name,
    primary_email_address: c.email_addresses.find((e) => e.primary)?.address ?? null,
    primary_phone_number: c.phone_numbers.find((p) => p.primary)?.number ?? null,
    email_addresses: c.email_addresses.map((e) => ({ address: e.address, primary: e.primary })),
    phone_numbers: c.phone_numbers.map((p) => ({ number: p.number, primary: p.primary })),
    updated_at: c.updated_at ?? null,
  };
  return clioContactRow(listed);
}

const syncs = () => stack.services.mongo.db.collection<any>(COLLECTIONS.contactSyncs);

describe('answers around a sync', () => {
  it('409 sync_running, 404 across firms, a given-up job reported failed and its claim let go', async () => {
    expect(workers).toBeUndefined();
    clio.reset();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    // No worker runs: the sync waits, and says so.
    expect((await firm.client.get(`/api/contacts/sync/${jobId}`)).body).toEqual({
      job_id: jobId,
      status: 'running',
      pages: 0,
      imported: 0,
      duplicates: 0,
      errors: 0,
    });
    const again = await firm.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'clio' });
    expectError(again, 409, 'sync_running');
    expect(again.body.error.message).toContain(jobId);

    const other = await createFirm(stack);
    expectError(await other.client.get(`/api/contacts/sync/${jobId}`), 404, 'sync_job_not_found');
    expectError(await firm.client.get('/api/contacts/sync/csy_nope'), 404, 'sync_job_not_found');
    expectError(
      await other.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'clio' }),
      403,
      'forbidden',
    );

    // As when BullMQ gives the job up without its processor finishing: GET says failed, and
    // the firm may sync again.
    await stack.services.queues.contacts.remove(jobId);
    const gone = await firm.client.get(`/api/contacts/sync/${jobId}`);
    expect(gone.body).toMatchObject({ status: 'failed', message: expect.stringMatching(/no longer queued/) });
    const next = await startSync(firm.client, firm.slug);
    await stack.services.queues.contacts.remove(next);
    expect((await firm.client.get(`/api/contacts/sync/${next}`)).body.status).toBe('failed');
  });

  it('409 crm_not_connected without Clio, and after Clio refused to renew the grant', async () => {
    const firm = await createFirm(stack);
    const res = await firm.client.post('/api/contacts/sync', { firmSlug: firm.slug, source: 'clio' });
    expectError(res, 409, 'crm_not_connected');
    expect(res.body.error.message).toMatch(/connect Clio/);

    const refused = await createFirm(stack);
    await connectClio(stack, refused);
    // What a refused refresh (invalid_grant) records (core/domain/crm/clio-connection.ts).
    await setFirmCrm(stack.services, refused.slug, {
      provider: 'clio',
      oauth: { region: 'us', status: 'reconnect_required', connected_at: new Date().toISOString() },
    });
    const again = await refused.client.post('/api/contacts/sync', { firmSlug: refused.slug, source: 'clio' });
    expectError(again, 409, 'crm_not_connected');
  });

  it('bad bodies are 400 naming the field; nothing is started', async () => {
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const cases: Array<[unknown, string]> = [
      [{ firmSlug: firm.slug }, '/source'],
      [{ firmSlug: firm.slug, source: 'hubspot' }, '/source'],
      [{ source: 'clio' }, '/firmSlug'],
      [{ firmSlug: { $ne: null }, source: 'clio' }, '/firmSlug'],
      [{ firmSlug: firm.slug, source: 'clio', extra: 1 }, '/extra'],
      [{ firmSlug: firm.slug, source: 'clio', defaultCountry: 'ZZ' }, '/defaultCountry'],
      [{ firmSlug: firm.slug, source: 'clio', defaultCountry: 7 }, '/defaultCountry'],
    ];
    for (const [body, path] of cases) {
      const details = expectError(await firm.client.post('/api/contacts/sync', body), 400, 'invalid_request');
      expect(
        details.map((d) => d.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expectError(await firm.client.post('/api/contacts/sync', [1]), 400, 'invalid_request');
    expect(await syncs().countDocuments({ firm: firm.slug })).toBe(0);
  });
});

describe('two runners of one sync at once', () => {
  /**
   * 250 Persons in Clio, three listing pages (100 a page), few of them rows so that a runner's
   * pages take little time (one runner is held inside a page while the other reads them all, and
   * Clio's client gives up on an answer after 20 s): every tenth has a phone and an email, the
   * others neither (not rows). Person 150 repeats the email of person 140 (a duplicate), person
   * 210 has an invalid phone (an error row).
   */
  const SERVED = { pages: 3, imported: 23, duplicates: 1, errors: 1 };
  function seedThreePages(): void {
    clio.reset();
    for (let i = 0; i < 250; i++) {
      const row = i % 10 === 0;
      const email = i === 150 ? `twin${i - 10}@example.com` : `twin${i}@example.com`;
      const phone = i === 210 ? '12345' : `+1312555${pad(i)}`;
      clio.contacts.push({
        id: 7000 + i,
        type: 'Person',
        first_name: `Twin${i}`,
        last_name: 'Runner',
        name: `Twin${i} Runner`,
        email_addresses: row ? [{ name: 'Home', address: email, primary: true }] : [],
        phone_numbers: row ? [{ name: 'Personal', number: phone, primary: true }] : [],
        updated_at: DAYS_AGO,
      });
    }
  }

  /** A worker's services, two pages a turn of the contacts slot (CONTACTS_SYNC_SLICE_PAGES=2). */
  const sliced = () => ({
    ...stack.services,
    config: { ...stack.services.config, contactsSyncSlicePages: 2 },
  });
  /** One run of the sync's job: the record after it, or what it threw. */
  const runOnce = (job: { syncId: string; firm: string }): Promise<unknown> =>
    runContactSync(sliced(), job).catch((err: unknown) => err);
  /**
   * The sync's job as the worker holding it runs it: a slice ended, or a page another runner
   * counted, is the job delayed and run again, until the sync is no longer running. A runner
   * whose job was taken over has no job to delay: its run ends at its first throw (runOnce).
   */
  async function runHoldingTheJob(job: { syncId: string; firm: string }): Promise<unknown> {
    for (;;) {
      const ended = await runOnce(job);
      if (!(ended instanceof SyncSliceEnded) && !(ended instanceof RecordBusyError)) return ended;
    }
  }

  /** Asserts the sync completed with what Clio served, each page imported once, each contact once. */
  async function expectServedOnce(firm: { slug: string; client: Stack['admin'] }, jobId: string) {
    const got = await firm.client.get(`/api/contacts/sync/${jobId}`);
    expect(got.body).toEqual({ job_id: jobId, status: 'completed', ...SERVED });
    const pages = await importsOf(stack).find({ sync_id: jobId }).toArray();
    expect(pages.map((p) => [p._id, p.status]).sort()).toEqual(
      Array.from({ length: SERVED.pages }, (_, n) => [pageImportId(jobId, n), 'completed']),
    );
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts).toHaveLength(SERVED.imported);
    expect(new Set(contacts.map((c) => c.external_id)).size).toBe(SERVED.imported);
  }

  it('a runner held inside a page while the job is taken over and finished counts nothing again', async () => {
    expect(workers).toBeUndefined();
    seedThreePages();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    const job = { syncId: jobId, firm: firm.slug };

    // The first runner is held inside page 0: Clio keeps its answer.
    const releaseFirst = clio.hold();
    const first = runOnce(job);
    await eventually(async () => expect(clio.held()).toBe(1));
    // Requests from now on are answered (holding again and opening at once leaves the first held).
    clio.hold()();
    // The job taken over (its lock lapsed while the first runner lived): the second runner reads
    // every page and completes the sync.
    expect(await runHoldingTheJob(job)).toMatchObject({ status: 'completed', ...SERVED });
    expect(clio.held()).toBe(1);
    await expectServedOnce(firm, jobId);

    // The first runner's page 0 arrives: it finds the page counted by the other, leaves the
    // record as it is and steps aside (its job would be delayed: it no longer holds it).
    releaseFirst();
    const late = await first;
    await expectServedOnce(firm, jobId);
    expect(late).toBeInstanceOf(RecordBusyError);
    // The job is done: nothing else runs it.
    await stack.services.queues.contacts.remove(jobId);
  });

  it('two runners reading the same pages at the same moment store and count each page once', async () => {
    seedThreePages();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    const job = { syncId: jobId, firm: firm.slug };

    // Both ask Clio for page 0 and get it at once: the job taken over from a runner that lived,
    // and that runner, both at the page the record names.
    const release = clio.hold();
    const taken = runOnce(job);
    const holding = runHoldingTheJob(job);
    await eventually(async () => expect(clio.held()).toBe(2));
    release();
    const [late, ended] = await Promise.all([taken, holding]);
    expect(ended).toMatchObject({ status: 'completed', ...SERVED });
    await expectServedOnce(firm, jobId);
    // The other ended as a runner of a live sync may: a page the first counted, or its slice,
    // stepped aside from (or the sync ended) — never a store error.
    const how = late instanceof Error ? late.name : (late as { status: string }).status;
    expect(['RecordBusyError', 'SyncSliceEnded', 'completed'], String(late)).toContain(how);
    console.log(`two runners at once: the one whose job was taken over ended with ${how}`);
    await stack.services.queues.contacts.remove(jobId);
  });
  it('a runner that counted the last page and died before completing: the next run completes it, reading nothing again', async () => {
    seedThreePages();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    const job = { syncId: jobId, firm: firm.slug };
    expect(await runHoldingTheJob(job)).toMatchObject({ status: 'completed', ...SERVED });
    // What the runner leaves when it dies between its last page's write and the completion: the
    // record after the last page (no link after it), no completion, the firm's sync still held.
    const db = stack.services.mongo.db;
    const last = await db.collection<any>(COLLECTIONS.contactSyncPages).findOne({ _id: `${jobId}|2` });
    expect(last.moved).toMatchObject({ status: 'running', pages: 3, page_url: null });
    await syncs().replaceOne({ _id: jobId }, last.moved);
    await db.collection<any>(COLLECTIONS.contactSyncCompletions).deleteOne({ _id: jobId });
    await db
      .collection<any>(COLLECTIONS.contactSyncClaims)
      .insertOne({ _id: `${firm.slug}|clio`, sync_id: jobId, created_at: new Date() });
    expect((await firm.client.get(`/api/contacts/sync/${jobId}`)).body.status).toBe('running');

    const asked = clio.requests.length;
    expect(await runOnce(job)).toMatchObject({ status: 'completed', ...SERVED });
    expect(clio.requests.slice(asked).filter((r) => LISTING.test(r.path))).toEqual([]);
    await expectServedOnce(firm, jobId);
    // The firm's sync let go: another may start.
    await stack.services.queues.contacts.remove(jobId);
    const next = await startSync(firm.client, firm.slug);
    await stack.services.queues.contacts.remove(next);
  });
  it('a late write of an older page’s record, after the sync completed, changes nothing GET or a later run answers', async () => {
    seedThreePages();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    const job = { syncId: jobId, firm: firm.slug };
    expect(await runHoldingTheJob(job)).toMatchObject({ status: 'completed', ...SERVED });
    // The write of a runner that lost page 1 to the other and read the record before the other
    // wrote it, landing after the sync completed (no write on FerretDB is conditional and atomic):
    // the record after page 1, running.
    const db = stack.services.mongo.db;
    const older = await db.collection<any>(COLLECTIONS.contactSyncPages).findOne({ _id: `${jobId}|1` });
    expect(older.moved).toMatchObject({ status: 'running', pages: 2 });
    await syncs().replaceOne({ _id: jobId }, older.moved);
    await expectServedOnce(firm, jobId);

    const asked = clio.requests.length;
    expect(await runOnce(job)).toMatchObject({ status: 'completed', ...SERVED });
    expect(clio.requests.slice(asked).filter((r) => LISTING.test(r.path))).toEqual([]);
    await expectServedOnce(firm, jobId);
    // contacts.sync.completed once, with what Clio served.
    const events = await eventsOf(stack, firm.slug);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['contacts.sync.completed', { job_id: jobId, status: 'completed', ...SERVED }],
    ]);
    await stack.services.queues.contacts.remove(jobId);
  });
  /**
   * A sync run to completion, then the store put back as it stood before its runner counted the
   * last page: what the runner wrote for that page and the completion is replayed by the returned
   * store's `between`, right after a reader's first read of the last page's claim (GET reads the
   * record and finds that page not counted yet; the runner then counts it and completes the sync
   * before GET's next read: what CI once saw answered completed, 24 pages of 25).
   */
  async function lastPageLandingMidRead() {
    seedThreePages();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    expect(await runHoldingTheJob({ syncId: jobId, firm: firm.slug })).toMatchObject({
      status: 'completed',
      ...SERVED,
    });
    const db = stack.services.mongo.db;
    const moves = db.collection<any>(COLLECTIONS.contactSyncPages);
    const completions = db.collection<any>(COLLECTIONS.contactSyncCompletions);
    const lastPage = `${jobId}|${SERVED.pages - 1}`;
    const countedLast = await moves.findOne({ _id: lastPage });
    const completion = await completions.findOne({ _id: jobId });
    const completedRecord = await syncs().findOne({ _id: jobId });
    const before = (await moves.findOne({ _id: `${jobId}|${SERVED.pages - 2}` })).moved;
    expect(before).toMatchObject({ status: 'running', pages: SERVED.pages - 1 });
    await moves.deleteOne({ _id: lastPage });
    await completions.deleteOne({ _id: jobId });
    await syncs().replaceOne({ _id: jobId }, before);
    const racing = readThen(db, COLLECTIONS.contactSyncPages, lastPage, async () => {
      await moves.insertOne(countedLast);
      await syncs().replaceOne({ _id: jobId }, countedLast.moved);
      await completions.insertOne(completion);
      await syncs().replaceOne({ _id: jobId }, completedRecord);
    });
    const services = { ...stack.services, mongo: { ...stack.services.mongo, db: racing } };
    return { firm, jobId, before, services, lastPage, moves };
  }

  it('a GET while a runner counts the last page and completes the sync answers running, then completed with every page; never completed without the last', async () => {
    const { firm, jobId, before, services, lastPage, moves } = await lastPageLandingMidRead();
    const seen = await contactSyncState(services, before);
    // As it stood at one moment: running, the last page still to come.
    expect(seen).toMatchObject({ status: 'running', pages: SERVED.pages - 1 });
    expect(await moves.findOne({ _id: lastPage })).not.toBeNull();
    // The next GET: completed, with every page.
    expect((await firm.client.get(`/api/contacts/sync/${jobId}`)).body).toEqual({
      job_id: jobId,
      status: 'completed',
      ...SERVED,
    });
    await stack.services.queues.contacts.remove(jobId);
  });

  it('a GET that reads the sync running, and then finds its job gone because it completed and left BullMQ, answers completed', async () => {
    const { firm, jobId, before, services } = await lastPageLandingMidRead();
    // The job completed and left BullMQ's finished history (it keeps the last 20).
    await stack.services.queues.contacts.remove(jobId);
    expect(await contactSyncState(services, before)).toMatchObject({ status: 'completed', ...SERVED });
    expect((await firm.client.get(`/api/contacts/sync/${jobId}`)).body).toEqual({
      job_id: jobId,
      status: 'completed',
      ...SERVED,
    });
    // Nothing was rolled back: every page's import stands.
    const pages = await importsOf(stack).find({ sync_id: jobId }).toArray();
    expect(pages.map((p) => p.status)).toEqual(Array.from({ length: SERVED.pages }, () => 'completed'));
  });
  it('a page staged before pages were staged under a name of their own is imported from its rows on resume', async () => {
    seedThreePages();
    clio.contacts.splice(100);
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    const jobId = await startSync(firm.client, firm.slug);
    const job = { syncId: jobId, firm: firm.slug };
    // As the code before left a one-page sync whose worker died after staging page 0: its rows
    // under the import's own id (`<import>:<n>`), a record naming no other, the link after it kept.
    const db = stack.services.mongo.db;
    const importId = pageImportId(jobId, 0);
    const rows = clio.contacts.flatMap((c) => rowOf(c) ?? []);
    const parts = splitImportRows(rows);
    await stageImportRows(db, { importId, firm: firm.slug }, parts);
    const now = new Date();
    await importsOf(stack).insertOne({
      _id: importId,
      firm: firm.slug,
      status: 'processing',
      stage: 'queued',
      rows: rows.length,
      chunks: parts.length,
      default_country: 'US',
      sync_id: jobId,
      result: null,
      failure: null,
      created_at: now,
      updated_at: now,
      completed_at: null,
    } as any);
    await syncs().updateOne({ _id: jobId }, { $set: { current: { page: 0, next: null } } });

    const asked = clio.requests.length;
    const ended = await runOnce(job);
    expect(ended).toMatchObject({ status: 'completed', pages: 1, imported: 10, duplicates: 0, errors: 0 });
    expect(clio.requests.slice(asked).filter((r) => LISTING.test(r.path))).toEqual([]);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBe(10);
    // Its pieces let go once imported.
    const pieces = db.collection<any>(COLLECTIONS.contactImportChunks);
    expect(await pieces.countDocuments({ import_id: importId })).toBe(0);
    await stack.services.queues.contacts.remove(jobId);
  });
});

describe('a sync of 2,500 Clio contacts whose worker is killed in the middle', () => {
  it('stores every contact once, counts as an import of the same rows, then reads only what changed', async () => {
    seedClio();
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    // Clio limits: every 7th listing request is a 429 with Retry-After.
    let listed = 0;
    clio.injectFailure = (r) =>
      r.method === 'GET' && LISTING.test(r.path) && ++listed % 7 === 0
        ? { status: 429, retryAfter: '1' }
        : undefined;

    child = startWorkerProcess({ ...stack.env, WORKER_QUEUES: 'contacts' });
    const jobId = await startSync(firm.client, firm.slug);
    // Killed while page 8 (or one soon after it) is being imported: claims taken, the page not
    // yet counted.
    const fromPage8 = new Set(Array.from({ length: 17 }, (_, n) => pageImportId(jobId, 8 + n)));
    await eventually(
      async () => {
        const page = await importsOf(stack).findOne({ sync_id: jobId, stage: 'claiming' });
        expect(fromPage8.has(page?._id ?? '')).toBe(true);
        expect(await contactKeysOf(stack).countDocuments({ import_id: page!._id })).toBeGreaterThan(0);
      },
      120_000,
      2,
    );
    child.kill('SIGKILL');
    await exitOf(child);
    const atKill = await syncs().findOne({ _id: jobId });
    expect(atKill.status).toBe('running');
    expect(atKill.pages).toBeGreaterThanOrEqual(8);
    expect(atKill.pages).toBeLessThan(25);

    // The access token expires meanwhile: the resumed sync refreshes it once and goes on.
    const refreshes = clio.oauth.refreshCount();
    clio.oauth.expireAccessTokens();
    workers = startInProcessWorkers(stack);
    const result = await finished(firm.client, jobId);
    expect(clio.oauth.refreshCount()).toBe(refreshes + 1);
    expect(listed).toBeGreaterThan(25);

    // The same rows imported into a firm of their own, in one request.
    const rows = clio.contacts.flatMap((c) => rowOf(c) ?? []);
    expect(rows).toHaveLength(2450);
    const control = await createFirm(stack);
    const imported = await importRows(control.client, control.slug, rows);
    expect(imported).toMatchObject({ imported: 2350, duplicates: 50, errors: 50 });
    const listings = clio.requests.filter((r) => LISTING.test(r.path));
    // Clio's own paging links (no `.json`) were followed, and every page asked only for fields
    // Clio's document has: the spec-checked fake refused nothing.
    expect(listings.filter((r) => r.path === '/api/v4/contacts').length).toBeGreaterThanOrEqual(24);
    expect(listings.every((r) => r.query.fields!.includes('email_addresses{address,primary}'))).toBe(true);
    expect(clio.refusals).toEqual([]);
    const unauthorized = listings.length - listed;
    const limited = Math.floor(listed / 7);
    console.log(
      `clio sync: killed with ${atKill.pages} of 25 pages counted (page ${atKill.pages} mid-import); ` +
        `sync ${JSON.stringify({ pages: result.pages, imported: result.imported, duplicates: result.duplicates, errors: result.errors })}; ` +
        `import of the same ${rows.length} rows ${JSON.stringify({ imported: imported.imported, duplicates: imported.duplicates, errors: imported.errors })}; ` +
        `listing requests ${listings.length}: 25 pages, ${limited} answered 429, ${unauthorized} answered 401 (expired token), ` +
        `${listings.length - 25 - limited - unauthorized} read again; token refreshes ${clio.oauth.refreshCount() - refreshes}`,
    );
    expect(result).toEqual({
      job_id: jobId,
      status: 'completed',
      pages: 25,
      imported: imported.imported,
      duplicates: imported.duplicates,
      errors: imported.errors,
    });

    // Every contact once: 2,350, each Clio id once, no phone or email twice, each from Clio.
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts).toHaveLength(2350);
    expect(new Set(contacts.map((c) => c.external_id)).size).toBe(2350);
    expect(contacts.every((c) => c.source === 'clio')).toBe(true);
    const fields = (c: any) => [c.external_id, c.phone ?? null, c.email ?? null, c.first_name, c.last_name];
    const controlContacts = await contactsOf(stack).find({ firm: control.slug }).toArray();
    expect(contacts.map(fields).sort()).toEqual(controlContacts.map(fields).sort());
    expect(await importsOf(stack).countDocuments({ firm: firm.slug, status: { $ne: 'completed' } })).toBe(0);

    // A second run reads what changed since the first began: 30 stored people edited in Clio
    // (a new phone, the same email: the import calls them duplicates, as it would), one whose
    // invalid phone was corrected (an error before, imported now) and 20 new ones.
    clio.injectFailure = undefined;
    const firstStarted = (await syncs().findOne({ _id: jobId })).started_at as Date;
    const stored = new Set(contacts.map((c) => Number(c.external_id)));
    const people = clio.contacts.filter((c) => stored.has(c.id));
    for (const c of people.slice(100, 130)) {
      clio.updateContact(c.id, {
        phone_numbers: [{ name: 'Personal', number: `+1212555${pad(c.id % 10_000)}`, primary: true }],
      });
    }
    const refused = clio.contacts.find((c) => c.phone_numbers[0]?.number === '12345')!;
    clio.updateContact(refused.id, {
      phone_numbers: [{ name: 'Personal', number: '+13125550100', primary: true }],
    });
    for (let i = 0; i < 20; i++) {
      clio.contacts.push({
        id: 90_000 + i,
        type: 'Person',
        first_name: `New${i}`,
        last_name: 'Client',
        name: `New${i} Client`,
        email_addresses: [{ name: 'Home', address: `new${i}@example.com`, primary: true }],
        phone_numbers: [],
        updated_at: new Date().toISOString(),
      });
    }
    const before = clio.requests.length;
    const secondId = await startSync(firm.client, firm.slug);
    const second = await finished(firm.client, secondId);
    expect(second).toMatchObject({ status: 'completed', pages: 1, imported: 21, duplicates: 30, errors: 0 });
    // contacts.sync.completed once a sync (the first's worker killed mid-way included), carrying
    // what GET answers; a sync's pages are no contacts.import.completed.
    // The event is recorded by the job's last step, just after the sync reads completed.
    const events = await eventually(async () => {
      const found = await eventsOf(stack, firm.slug);
      expect(found.map((e) => [e.type, e.subject])).toEqual([
        ['contacts.sync.completed', jobId],
        ['contacts.sync.completed', secondId],
      ]);
      return found;
    });
    expect(events.map((e) => e.data)).toEqual([result, second]);
    // A sync job run again after it completed (its event lost with the worker): the same event.
    await eventDocs(stack).deleteMany({ firm: firm.slug });
    expect(await rerunCompleted(stack, 'syncContacts')).toBeGreaterThanOrEqual(2);
    expect(await eventsOf(stack, firm.slug)).toEqual(events);
    const asked = clio.requests.slice(before).filter((r) => LISTING.test(r.path));
    expect(asked).toHaveLength(1);
    expect(asked[0]!.query).toMatchObject({ type: 'Person', order: 'id(asc)', limit: '100' });
    expect(Date.parse(asked[0]!.query.updated_since!)).toBe(firstStarted.getTime() - 5 * 60_000);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBe(2371);
    console.log(
      `clio sync, second run: ${JSON.stringify(second)}; rows read ${asked.length} page(s), updated_since ${asked[0]!.query.updated_since}`,
    );

    // Known clients: a lead whose phone or email is a synced client's is marked with that client;
    // another firm's clients, and strangers, are not.
    const client = contacts.find((c) => c.phone !== undefined && c.email !== undefined)!;
    const byPhone = await firm.client.post('/api/leads', { firmSlug: firm.slug, phone: client.phone });
    expect(byPhone.body.known_client).toEqual({
      source: 'clio',
      contact_id: client._id,
      external_id: client.external_id,
    });
    const byEmail = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      email: client.email!.toUpperCase(),
    });
    expect(byEmail.body.known_client).toMatchObject({ contact_id: client._id });
    expect((await firm.client.get(`/api/leads/${byEmail.body.id}`)).body.known_client).toMatchObject({
      contact_id: client._id,
    });
    const stranger = await firm.client.post('/api/leads', { firmSlug: firm.slug, phone: '+13055550142' });
    expect(stranger.body.known_client).toBeNull();
    // A contact imported without source "clio" is a contact, not a client.
    await importRows(firm.client, firm.slug, [{ name: 'Walk In', phone: '+13055550199' }]);
    const walkIn = await firm.client.post('/api/leads', { firmSlug: firm.slug, phone: '+13055550199' });
    expect(walkIn.body.known_client).toBeNull();
  }, 400_000);
});

describe('Clio asking for a long wait', () => {
  it('a 429 whose Retry-After (45 s) is longer than an attempt waits: the sync job runs again no sooner, then completes', async () => {
    clio.reset();
    for (let i = 0; i < 3; i++) {
      clio.contacts.push({
        id: 70_000 + i,
        type: 'Person',
        first_name: `Wait${i}`,
        last_name: 'Client',
        name: `Wait${i} Client`,
        email_addresses: [{ name: 'Home', address: `wait${i}@example.com`, primary: true }],
        phone_numbers: [],
        updated_at: DAYS_AGO,
      });
    }
    const firm = await createFirm(stack);
    await connectClio(stack, firm);
    let refused = false;
    clio.injectFailure = (r) => {
      if (refused || r.method !== 'GET' || !LISTING.test(r.path)) return undefined;
      refused = true;
      return { status: 429, retryAfter: '45' };
    };
    try {
      workers ??= startInProcessWorkers(stack);
      const syncId = await startSync(firm.client, firm.slug);
      const queue = stack.services.queues.contacts;
      const { job, at } = await eventually(async () => {
        const found = await queue.getJob(syncId);
        expect(await found?.getState()).toBe('delayed');
        expect(found!.attemptsMade).toBe(1);
        // The delayed set's score: when it becomes due (ms) × 4096 + a counter.
        const score = await stack.services.redis.zscore(queue.keys.delayed!, syncId);
        return { job: found!, at: Math.floor(Number(score) / 0x1000) };
      }, 60_000);
      const refusedAt = clio.requests.find((r) => r.method === 'GET' && LISTING.test(r.path))!.at;
      expect(at - refusedAt).toBeGreaterThanOrEqual(45_000);
      // Not 45 s of this test: promoted, the job reads the page Clio now gives.
      await job.promote();
      expect(await finished(firm.client, syncId)).toMatchObject({ status: 'completed', imported: 3 });
    } finally {
      clio.injectFailure = undefined;
    }
  });
});
