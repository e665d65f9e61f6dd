// The contacts import as a job: the 202 path (a wait budget of 0 here), GET of the job, two and
// more concurrent imports of overlapping rows (never two contacts with one phone or email), a
// worker process killed mid-import (the retry gives the same summary, nothing twice, no claim
// left over), a re-run of a finished job, and the rollback of an import that failed for good.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  failContactImport,
  importsCollection,
  settleAbandonedImports,
} from '../../core/domain/contacts/import-record.js';
import { runContactImport } from '../../core/domain/contacts/import-rows.js';
import { contactImportState } from '../../core/domain/contacts/import-request.js';
import { splitImportRows, stageImportRows } from '../../core/domain/contacts/import-staging.js';
import { claimMany } from '../../core/platform/db/claim.js';
import type { Workers } from '../../workers/runner.js';
import { JOBS } from '../../jobs/table.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import {
  contactKeysOf,
  contactsOf,
  expectNoTwins,
  importsOf,
  pollJob,
  type ImportSummary,
} from './support.js';

let stack: Stack;
let workers: Workers | undefined;
let child: ChildProcess | undefined;

beforeAll(async () => {
  stack = await startStack({
    // No waiting: every import answers 202. A dead worker's job is taken over after 2 s, and
    // the firm's turn it held lapses after 4 s.
    env: { CONTACTS_IMPORT_WAIT_MS: '0', JOB_LOCK_MS: '2000', CONTACTS_IMPORT_LOCK_MS: '4000' },
  });
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await workers?.stop();
  await stack?.stop();
});

const pad = (n: number) => String(n).padStart(4, '0');
const AREAS = ['212', '310', '415', '617'];
/** Person i: a distinct valid US phone and email. */
const person = (i: number) => ({
  first_name: `P${i}`,
  phone: `+1${AREAS[Math.floor(i / 10_000)]}555${pad(i % 10_000)}`,
  email: `p${i}@example.com`,
});

async function accepted(client: Stack['admin'], firmSlug: string, contacts: unknown[]): Promise<string> {
  const res = await client.post('/api/contacts/import', { firmSlug, contacts });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(202);
  expect(res.body).toEqual({ job_id: expect.stringMatching(/^imp_/), status: 'processing' });
  return res.body.job_id as string;
}

async function importAgain(client: Stack['admin'], firmSlug: string, contacts: unknown[]) {
  return resultOf(client, await accepted(client, firmSlug, contacts));
}

async function resultOf(
  client: Stack['admin'],
  jobId: string,
): Promise<ImportSummary & { job_id: string; status: string }> {
  const res = await pollJob(client, jobId, 120_000);
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('completed');
  return res.body;
}

describe('the 202 path', () => {
  it('answers 202 with a job_id; GET says processing (202) until a worker has done it, then the result', async () => {
    const firm = await createFirm(stack);
    const rows = [person(1), person(2), { phone: person(1).phone }, 'bad row'];
    const jobId = await accepted(firm.client, firm.slug, rows);
    // No worker runs yet: the job waits, and says so.
    const pending = await firm.client.get(`/api/contacts/import/${jobId}`);
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({ job_id: jobId, status: 'processing' });
    const other = await createFirm(stack);
    expectError(await other.client.get(`/api/contacts/import/${jobId}`), 404, 'import_job_not_found');

    workers = startInProcessWorkers(stack);
    const done = await resultOf(firm.client, jobId);
    expect(done).toEqual({
      job_id: jobId,
      status: 'completed',
      imported: 2,
      duplicates: 1,
      errors: 1,
      error_rows: [{ index: 3, reason: expect.stringMatching(/not an object/) }],
    });
    // The result stays.
    expect((await firm.client.get(`/api/contacts/import/${jobId}`)).body).toEqual(done);
    await workers.stop();
    workers = undefined;
  });
});

describe('a job that is gone', () => {
  it('is reported failed by GET (a record never left processing forever)', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const jobId = await accepted(firm.client, firm.slug, [person(3)]);
    // As when BullMQ gives a job up without its processor finishing (stalled too often), or drops it.
    await stack.services.queues.contacts.remove(jobId);
    const res = await firm.client.get(`/api/contacts/import/${jobId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      job_id: jobId,
      status: 'failed',
      message: expect.stringMatching(/no longer queued/),
    });
  });
});

describe('a job that completed and then left BullMQ', () => {
  it('is completed for a GET that read the record while it was processing, and nothing is rolled back', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const jobId = await accepted(firm.client, firm.slug, [person(4), person(5)]);
    // A GET reads the record, processing.
    const seenProcessing = (await importsCollection(stack.services.mongo.db).findOne({ _id: jobId }))!;
    expect(seenProcessing).toMatchObject({ status: 'processing', result: null });
    // Then the worker completes the import, and its job leaves the finished history (BullMQ keeps
    // the last 20), before the GET asks BullMQ for the job.
    await runContactImport(stack.services, { importId: jobId, firm: firm.slug, defaultCountry: 'US' });
    await stack.services.queues.contacts.remove(jobId);
    const answer = await contactImportState(stack.services, seenProcessing);
    expect(answer).toMatchObject({ status: 'completed', result: { imported: 2, duplicates: 0, errors: 0 } });
    expect(await contactsOf(stack).countDocuments({ import_id: jobId })).toBe(2);
    expect((await firm.client.get(`/api/contacts/import/${jobId}`)).body).toMatchObject({
      job_id: jobId,
      status: 'completed',
      imported: 2,
    });
  });
});

describe('a worker killed mid-import', () => {
  it('is retried by another worker: the same summary, no contact twice, no claim left over', async () => {
    const firm = await createFirm(stack);
    // 2,000 rows: 1,960 people, 20 repeats of the row before (same phone, new email), 20 errors;
    // their 3,960 keys are claimed in 8 batches, so the kill below lands between two of them.
    const rows = Array.from({ length: 2000 }, (_, i) => {
      if (i % 100 === 98) return { phone: person(i - 1).phone, email: `again${i}@example.com` };
      if (i % 100 === 99) return { phone: '12345', email: `err${i}@example.com` };
      return person(i);
    });
    child = startWorkerProcess({ ...stack.env, WORKER_QUEUES: 'contacts' });
    const jobId = await accepted(firm.client, firm.slug, rows);
    // Kill it while it claims: the import has begun claiming and holds some keys.
    await eventually(
      async () => {
        const record = await importsOf(stack).findOne({ _id: jobId });
        expect(record?.stage).toBe('claiming');
        expect(await contactKeysOf(stack).countDocuments({ firm: firm.slug })).toBeGreaterThan(0);
      },
      60_000,
      5,
    );
    child.kill('SIGKILL');
    await exitOf(child);
    const record = await importsOf(stack).findOne({ _id: jobId });
    expect(record?.status).toBe('processing');
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBeLessThan(1960);

    workers = startInProcessWorkers(stack);
    const done = await resultOf(firm.client, jobId);
    expect(done).toMatchObject({ imported: 1960, duplicates: 20, errors: 20 });
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts).toHaveLength(1960);
    // Every key names a stored contact holding it; every contact's phone and email have a key.
    const keys = await contactKeysOf(stack).find({ firm: firm.slug }).toArray();
    const byId = new Map(contacts.map((c) => [c._id, c]));
    for (const key of keys) expect(byId.get(key.contact_id)?.[key.kind]).toBe(key.value);
    expect(keys).toHaveLength(contacts.length * 2);
  }, 180_000);
});

describe('concurrent imports of overlapping rows', () => {
  it('never create two contacts with one phone or email, and count each person once', async () => {
    workers ??= startInProcessWorkers(stack);
    const firm = await createFirm(stack);
    // Four imports over people 0..599, overlapping by half, some in reverse order; the last
    // also has people whose phone is one person's and email another's. (A firm's imports take
    // turns: more rows would only make each turn longer.)
    const batches = [
      Array.from({ length: 300 }, (_, i) => person(i)),
      Array.from({ length: 300 }, (_, i) => person(150 + i)).reverse(),
      Array.from({ length: 300 }, (_, i) => person(300 + i)),
      [
        ...Array.from({ length: 300 }, (_, i) => person(599 - i)),
        ...Array.from({ length: 20 }, (_, i) => ({ phone: person(i).phone, email: person(400 + i).email })),
      ],
    ];
    const jobIds = await Promise.all(batches.map((rows) => accepted(firm.client, firm.slug, rows)));
    const results = await Promise.all(jobIds.map((id) => resultOf(firm.client, id)));
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts).toHaveLength(600);
    expect(results.reduce((n, r) => n + r.imported, 0)).toBe(600);
    const rows = batches.reduce((n, b) => n + b.length, 0);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(rows - 600);
    expect(results.every((r) => r.errors === 0)).toBe(true);
  }, 180_000);

  it('also when the same batch is sent several times at once', async () => {
    workers ??= startInProcessWorkers(stack);
    const firm = await createFirm(stack);
    const rows = Array.from({ length: 200 }, (_, i) => person(5000 + i));
    const jobIds = await Promise.all([1, 2, 3].map(() => accepted(firm.client, firm.slug, rows)));
    const results = await Promise.all(jobIds.map((id) => resultOf(firm.client, id)));
    expect(results.map((r) => r.imported).sort((a, b) => a - b)).toEqual([0, 0, 200]);
    expect(results.map((r) => r.duplicates).sort((a, b) => a - b)).toEqual([0, 200, 200]);
    expect(await expectNoTwins(stack, firm.slug)).toHaveLength(200);
  }, 120_000);
});

describe('the claims themselves', () => {
  it('give each key to exactly one of many concurrent batch claimants (no lock involved)', async () => {
    const keys = stack.services.mongo.db.collection<{ _id: string; by: number }>(`claim_race_${Date.now()}`);
    const ids = Array.from({ length: 600 }, (_, i) => `k${i}`);
    // Eight claimants over overlapping windows of the ids, each in its own order.
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, c) => {
        const mine = ids.slice(c * 50, c * 50 + 250);
        if (c % 2 === 1) mine.reverse();
        return claimMany(
          keys,
          mine.map((_id) => ({ _id, by: c })),
        );
      }),
    );
    const winners = new Map<string, number>();
    claims.forEach((claimed, c) => {
      for (const id of claimed) {
        expect(winners.has(id), id).toBe(false);
        winners.set(id, c);
      }
    });
    const stored = await keys.find().toArray();
    expect(stored).toHaveLength(winners.size);
    for (const doc of stored) expect(doc.by).toBe(winners.get(doc._id));
    await keys.drop();
  });
});

describe('a job run again', () => {
  it('gives the same summary when its contacts were half written, and restores them', async () => {
    workers ??= startInProcessWorkers(stack);
    const firm = await createFirm(stack);
    const rows = [
      ...Array.from({ length: 300 }, (_, i) => person(7000 + i)),
      { phone: person(7000).phone },
      { phone: person(7001).phone, email: 'handover@example.com' },
      { phone: '+1 202 555 0143', email: 'HANDOVER@example.com' },
      { email: 'nope' },
    ];
    const jobId = await accepted(firm.client, firm.slug, rows);
    const first = await resultOf(firm.client, jobId);
    expect(first).toMatchObject({ imported: 301, duplicates: 2, errors: 1 });
    // As if the attempt had died after its claims, before its contacts were all written.
    await contactsOf(stack).deleteMany({ firm: firm.slug, first_name: { $in: ['P7003', 'P7100', 'P7299'] } });
    await importsOf(stack).updateOne({ _id: jobId }, {
      $set: { status: 'processing', stage: 'claiming', result: null },
    } as never);
    // Its staged rows were deleted when it completed: staged again, as they were.
    const ref = { importId: jobId, firm: firm.slug };
    await stageImportRows(stack.services.mongo.db, ref, splitImportRows(rows));
    const again = await runContactImport(stack.services, { ...ref, defaultCountry: 'US' });
    const { job_id: _id, status: _status, ...summary } = first;
    expect(again).toEqual(summary);
    expect(await expectNoTwins(stack, firm.slug)).toHaveLength(301);
    expect(await contactKeysOf(stack).countDocuments({ firm: firm.slug })).toBe(300 * 2 + 2);
    // A finished job asked again answers its stored result.
    expect(await runContactImport(stack.services, { ...ref, defaultCountry: 'US' })).toEqual(summary);
  }, 120_000);
});

describe('an import that failed for good', () => {
  it('is rolled back (its contacts and claims removed, others kept) and reported failed', async () => {
    workers ??= startInProcessWorkers(stack);
    const firm = await createFirm(stack);
    const before = [person(8000)];
    const beforeJob = await accepted(firm.client, firm.slug, before);
    await resultOf(firm.client, beforeJob);
    const rows = [person(8000), person(8001), person(8002)];
    const jobId = await accepted(firm.client, firm.slug, rows);
    await resultOf(firm.client, jobId);
    await importsOf(stack).updateOne({ _id: jobId }, { $set: { status: 'processing' } });
    await failContactImport(stack.services, { importId: jobId, firm: firm.slug }, 'the store kept failing');
    const contacts = await contactsOf(stack).find({ firm: firm.slug }).toArray();
    expect(contacts.map((c) => c.first_name)).toEqual(['P8000']);
    const keys = await contactKeysOf(stack).find({ firm: firm.slug }).toArray();
    expect(keys.map((k) => k.contact_id)).toEqual([contacts[0]!._id, contacts[0]!._id]);
    const res = await firm.client.get(`/api/contacts/import/${jobId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      job_id: jobId,
      status: 'failed',
      message: expect.stringMatching(/the store kept failing/),
    });
  });
});

describe('the sweep', () => {
  it('rolls back an import left processing whose job BullMQ no longer runs, and leaves running ones', async () => {
    workers ??= startInProcessWorkers(stack);
    // The workers' scheduler runs the sweep at once when they start: that run over (the next is
    // ten minutes off, and none is waiting or running), the sweeps below are this test's alone.
    const queue = stack.services.queues.contacts;
    await eventually(async () => {
      const scheduler = await queue.getJobScheduler(JOBS.sweepContactImports.name);
      expect(scheduler?.next ?? 0).toBeGreaterThan(Date.now() + 60_000);
      const running = await queue.getJobs(['active', 'wait', 'prioritized']);
      expect(running.filter((job) => job.name === JOBS.sweepContactImports.name)).toEqual([]);
    });
    const firm = await createFirm(stack);
    const abandoned = await accepted(firm.client, firm.slug, [person(8100), person(8101)]);
    await resultOf(firm.client, abandoned);
    const kept = await accepted(firm.client, firm.slug, [person(8102)]);
    await resultOf(firm.client, kept);
    // As if the first one's worker had died for good half-way: processing, claims made, no job.
    // (Its result is stored a moment before BullMQ completes its job, which while active cannot be
    // removed: it is removed once completed, if the history still holds it.)
    await eventually(async () =>
      expect(['completed', 'unknown']).toContain(await queue.getJobState(abandoned)),
    );
    const longAgo = new Date(Date.now() - 3600_000);
    await importsOf(stack).updateOne({ _id: abandoned }, {
      $set: { status: 'processing', stage: 'claiming', updated_at: longAgo },
    } as never);
    await queue.remove(abandoned);
    expect(await queue.getJobState(abandoned)).toBe('unknown');
    expect(await settleAbandonedImports(stack.services)).toBe(1);
    const contacts = await contactsOf(stack).find({ firm: firm.slug }).toArray();
    expect(contacts.map((c) => c.first_name)).toEqual(['P8102']);
    expect(await contactKeysOf(stack).countDocuments({ firm: firm.slug })).toBe(2);
    expect(await importsOf(stack).findOne({ _id: abandoned })).toMatchObject({ status: 'failed' });
    expect(await settleAbandonedImports(stack.services)).toBe(0);
    // Its rows import again as new.
    expect(await importAgain(firm.client, firm.slug, [person(8100), person(8101)])).toMatchObject({
      imported: 2,
    });
  });
});

describe('a web process stopping while a request waits for its import', () => {
  it('answers 202 with the job_id at once instead of dropping the request', async () => {
    const waiting = await startStack({
      env: { CONTACTS_IMPORT_WAIT_MS: '60000', SHUTDOWN_TIMEOUT_MS: '6000' },
    });
    try {
      const firm = await createFirm(waiting);
      const pending = firm.client.post('/api/contacts/import', {
        firmSlug: firm.slug,
        contacts: [person(9000)],
      });
      // No worker runs: the request waits until the process is told to stop.
      await eventually(async () =>
        expect(await importsOf(waiting).countDocuments({ firm: firm.slug })).toBe(1),
      );
      const stopping = waiting.web.stop();
      // Answered, not dropped: the drain closes the connections one second in
      // (SHUTDOWN_TIMEOUT_MS - 5 s), long before the 60 s wait ends, so a request that kept
      // waiting would have no answer at all.
      const res = await pending;
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ job_id: expect.stringMatching(/^imp_/), status: 'processing' });
      await stopping;
    } finally {
      await waiting.workers?.stop();
      await waiting.services.mongo.db.dropDatabase().catch(() => {});
    }
  });
});
