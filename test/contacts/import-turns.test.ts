// An import whose attempt failed half-way (after claiming keys, before releasing those of its
// duplicate rows) still holds those claims until its retry runs. Another import of the firm that
// takes the firm's turn in between must not count its rows duplicates of claims no contact will
// ever hold: it waits for the unfinished import, as a worker waits for the firm's turn.
//
// The failures are real ones. A failed attempt runs in a worker of its own whose link to the
// database goes through a TCP relay, closed right before that attempt releases the claims of its
// duplicate rows (test/helpers/store-timing.ts: the real call, made once the relay is down); the
// store itself stays up for everyone else. A killed attempt is a worker process's, SIGKILLed
// while it claims.
import type { ChildProcess } from 'node:child_process';
import { MongoError } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runContactImport } from '../../core/domain/contacts/import-rows.js';
import { contactKeyId } from '../../core/domain/contacts/contacts.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createLogger } from '../../core/platform/logger.js';
import { RecordBusyError } from '../../core/platform/redis-mutex.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createServices } from '../../core/wiring/services.js';
import type { Workers } from '../../workers/runner.js';
import { beforeCall } from '../helpers/store-timing.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startInProcessWorkers, startStack, type Stack } from '../helpers/stack.js';
import { startTcpRelay } from '../helpers/tcp-relay.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { contactKeysOf, contactsOf, expectNoTwins, importsOf, pollJob } from './support.js';

let stack: Stack;
let child: ChildProcess | undefined;
let workers: Workers | undefined;

beforeAll(async () => {
  // No workers until a test starts them: the test runs each import's job itself. Every import
  // answers 202. A dead worker's job is taken over after 2 s, the firm's turn it held lapses after 4 s.
  stack = await startStack({
    env: { CONTACTS_IMPORT_WAIT_MS: '0', JOB_LOCK_MS: '2000', CONTACTS_IMPORT_LOCK_MS: '4000' },
  });
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await workers?.stop();
  await stack?.stop();
});

type Firm = Awaited<ReturnType<typeof createFirm>>;

async function accepted(firm: Firm, contacts: unknown[]): Promise<string> {
  const res = await firm.client.post('/api/contacts/import', { firmSlug: firm.slug, contacts });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(202);
  return res.body.job_id as string;
}

const jobOf = (firm: Firm, importId: string) => ({ importId, firm: firm.slug, defaultCountry: 'US' });
const run = (firm: Firm, importId: string) => runContactImport(stack.services, jobOf(firm, importId));

/**
 * Runs the import's job once in a worker of its own that loses the database as it first deletes
 * key documents (releasing the claims of its duplicate rows, or rolling back an import given up):
 * the attempt fails there.
 */
async function failAsItReleases(firm: Firm, importId: string): Promise<void> {
  const relay = await startTcpRelay(new URL(stack.config.mongodbUri));
  const config = { ...stack.config, mongodbUri: relay.via(stack.config.mongodbUri) };
  const worker = createServices(config, createLogger(config.logLevel, 'test'), 'worker');
  const cut = beforeCall(worker.mongo.db, COLLECTIONS.contactKeys, 'deleteMany', () => relay.close());
  try {
    await expect(
      runContactImport({ ...worker, mongo: { ...worker.mongo, db: cut } }, jobOf(firm, importId)),
    ).rejects.toBeInstanceOf(MongoError);
  } finally {
    await worker.close();
  }
}

/** A duplicate of the firm's contact by its phone with a new email, its attempt failed holding that email. */
async function failedHoldingEmail(firm: Firm, phone: string, email: string): Promise<string> {
  const importId = await accepted(firm, [{ phone, email }]);
  await failAsItReleases(firm, importId);
  expect(await importsOf(stack).findOne({ _id: importId })).toMatchObject({
    status: 'processing',
    stage: 'claiming',
  });
  expect(await contactKeysOf(stack).countDocuments({ import_id: importId })).toBe(1);
  return importId;
}

describe('an import whose attempt failed after claiming', () => {
  it('holds up the firm’s next import until its retry: that one imports the email no contact has', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550171', email: 'first@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });

    // A duplicate of that contact by its phone, with a new email: the attempt claims the email,
    // then loses the database as it releases the claims of its duplicate rows.
    const a = await failedHoldingEmail(firm, '+1 212 555 0171', 'second@example.com');

    // While its retry waits for its backoff, another import of the firm with that email alone
    // takes the firm's turn: it steps aside, claiming nothing.
    const b = await accepted(firm, [{ email: 'Second@example.com' }]);
    await expect(run(firm, b)).rejects.toBeInstanceOf(RecordBusyError);
    expect(await importsOf(stack).findOne({ _id: b })).toMatchObject({
      status: 'processing',
      stage: 'queued',
    });
    // The first import's retry, then the second's.
    expect(await run(firm, a)).toMatchObject({ imported: 0, duplicates: 1, errors: 0 });
    expect(await run(firm, b)).toMatchObject({ imported: 1, duplicates: 0, errors: 0 });

    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.map((c) => c.email).sort()).toEqual(['first@example.com', 'second@example.com']);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug, email: 'second@example.com' })).toBe(1);
  });

  it('is rolled back when its job was given up, and the next import goes on at once', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550172', email: 'third@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });
    const a = await failedHoldingEmail(firm, '+12125550172', 'fourth@example.com');
    // As when BullMQ gives the job up without another attempt (it stalled too often).
    await stack.services.queues.contacts.remove(a);

    const b = await accepted(firm, [{ email: 'fourth@example.com' }]);
    expect(await run(firm, b)).toMatchObject({ imported: 1, duplicates: 0, errors: 0 });
    expect((await firm.client.get(`/api/contacts/import/${a}`)).body).toMatchObject({ status: 'failed' });
    expect(await contactKeysOf(stack).countDocuments({ import_id: a })).toBe(0);
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.map((c) => c.email).sort()).toEqual(['fourth@example.com', 'third@example.com']);
  });
});

describe('an import given up whose rollback was cut short', () => {
  it('is rolled back again by the firm’s next import: its claims do not outlive it', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550174', email: 'seventh@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });
    const a = await failedHoldingEmail(firm, '+12125550174', 'eighth@example.com');
    await stack.services.queues.contacts.remove(a);

    // The next import rolls it back, and loses the database as it deletes its claims.
    const b = await accepted(firm, [{ email: 'eighth@example.com' }]);
    await failAsItReleases(firm, b);
    expect(await importsOf(stack).findOne({ _id: a })).toMatchObject({ status: 'failed' });
    expect(await contactKeysOf(stack).countDocuments({ import_id: a })).toBe(1);

    // Its retry, or any later import of the firm, finishes the rollback first.
    expect(await run(firm, b)).toMatchObject({ imported: 1, duplicates: 0, errors: 0 });
    expect(await contactKeysOf(stack).countDocuments({ import_id: a })).toBe(0);
    const contacts = await expectNoTwins(stack, firm.slug);
    expect(contacts.map((c) => c.email).sort()).toEqual(['eighth@example.com', 'seventh@example.com']);
  });
});

describe('an import whose worker was killed while it claimed', () => {
  it('holds up the firm’s next import until another worker has retried it', async () => {
    const firm = await createFirm(stack);
    const existing = await accepted(firm, [{ phone: '+12125550173', email: 'fifth@example.com' }]);
    expect(await run(firm, existing)).toMatchObject({ imported: 1 });

    // First a duplicate of that contact by its phone, with a new email; then 1,999 new people:
    // their keys are claimed in 8 batches, the duplicate row's released only after the last.
    const people = Array.from({ length: 1999 }, (_, i) => ({
      phone: `+1310555${String(i).padStart(4, '0')}`,
      email: `person${i}@example.com`,
    }));
    const email = contactKeyId(firm.slug, 'email', 'sixth@example.com');
    child = startWorkerProcess({ ...stack.env, WORKER_QUEUES: 'contacts' });
    const a = await accepted(firm, [{ phone: '+12125550173', email: 'sixth@example.com' }, ...people]);
    // Killed once it holds the duplicate row's email.
    await eventually(
      async () => expect(await contactKeysOf(stack).findOne({ _id: email })).not.toBeNull(),
      60_000,
      5,
    );
    child.kill('SIGKILL');
    await exitOf(child);
    expect(await contactKeysOf(stack).findOne({ _id: email })).toMatchObject({ import_id: a });
    expect(await importsOf(stack).findOne({ _id: a })).toMatchObject({
      status: 'processing',
      stage: 'claiming',
    });

    // Once the dead worker's turn has lapsed, and before any worker has taken its job over, another
    // import of the firm with that email alone takes the firm's turn: it steps aside.
    const b = await accepted(firm, [{ email: 'sixth@example.com' }]);
    const turn = redisKeys(stack.config).contactsImportLock(firm.slug);
    await eventually(async () => expect(await stack.services.redis.exists(turn)).toBe(0), 30_000);
    await expect(run(firm, b)).rejects.toBeInstanceOf(RecordBusyError);
    expect(await contactKeysOf(stack).countDocuments({ import_id: b })).toBe(0);

    // Workers take the killed job over; the other import's job waits for it, then imports the email.
    workers = startInProcessWorkers(stack, ['contacts']);
    expect((await pollJob(firm.client, a, 120_000)).body).toMatchObject({
      status: 'completed',
      imported: 1999,
      duplicates: 1,
      errors: 0,
    });
    expect((await pollJob(firm.client, b, 60_000)).body).toMatchObject({
      status: 'completed',
      imported: 1,
      duplicates: 0,
    });
    await expectNoTwins(stack, firm.slug);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug, email: 'sixth@example.com' })).toBe(1);
  }, 180_000);
});
