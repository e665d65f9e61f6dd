// Staged imports (docs/contacts.md#memory): a contacts import's rows are staged in MongoDB, not carried by
// its job, so a waiting import costs Redis a few hundred bytes; the staged pieces are deleted once it has
// completed; a staging that fails half-way leaves no piece; and one firm may have only
// CONTACTS_IMPORT_MAX_PENDING imports waiting (429 with Retry-After beyond), each slot free again
// before its import shows completed or failed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { failContactImport } from '../../core/domain/contacts/import-record.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import {
  splitImportRows,
  stageImportRows,
  type ImportChunkDoc,
} from '../../core/domain/contacts/import-staging.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { expectNoTwins, pollJob } from './support.js';

let stack: Stack;
let workers: Workers | undefined;

beforeAll(async () => {
  // Every import answers 202 at once; no worker runs until a test starts one.
  stack = await startStack({ env: { CONTACTS_IMPORT_WAIT_MS: '0', CONTACTS_IMPORT_MAX_PENDING: '2' } });
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
});

const chunksOf = (s: Stack) =>
  s.services.mongo.db.collection<ImportChunkDoc>(COLLECTIONS.contactImportChunks);

/** 5,000 valid rows of about `bytes` in all (padded notes); each test imports them for a firm of its own. */
const bigRows = (tag: number, bytes: number) => {
  const notes = 'n'.repeat(Math.floor(bytes / 5000) - 100);
  return Array.from({ length: 5000 }, (_, i) => ({
    first_name: `Big${tag}-${i}`,
    phone: `+1212555${String(i).padStart(4, '0')}`,
    notes,
  }));
};

async function accepted(client: Stack['admin'], firmSlug: string, contacts: unknown[]): Promise<string> {
  const res = await client.post('/api/contacts/import', { firmSlug, contacts });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(202);
  return res.body.job_id as string;
}

describe('a large import waiting for a worker', () => {
  it('keeps its job data in Redis small (under 64 KB) while it waits, and after it completes', async () => {
    const firm = await createFirm(stack);
    const jobId = await accepted(firm.client, firm.slug, bigRows(1, 12_000_000));
    const queue = stack.services.queues.contacts;
    const jobKey = `${stack.config.queuePrefix}:contacts:${jobId}`;
    expect(await queue.getJobState(jobId)).toBe('waiting');
    // What Redis holds for the job, all of it (data, options, timestamps).
    expect(Number(await stack.services.redis.memory('USAGE', jobKey))).toBeLessThan(64 * 1024);
    expect(JSON.stringify((await queue.getJob(jobId))?.data).length).toBeLessThan(64 * 1024);

    workers = startWorkers(
      createServices(stack.config, createLogger('silent', 'test'), 'worker'),
      processors,
    );
    const done = await pollJob(firm.client, jobId, 120_000);
    expect(done.body).toMatchObject({ status: 'completed', imported: 5000, duplicates: 0, errors: 0 });
    expect(await expectNoTwins(stack, firm.slug)).toHaveLength(5000);
    const kept = await stack.services.redis.memory('USAGE', jobKey);
    if (kept !== null) expect(Number(kept)).toBeLessThan(64 * 1024);
    await workers.stop();
    workers = undefined;
  }, 180_000);

  it('staged chunks are removed after completion', async () => {
    const firm = await createFirm(stack);
    const jobId = await accepted(firm.client, firm.slug, bigRows(2, 3_000_000));
    // Waiting: its rows are in MongoDB, in pieces `<job_id>:<n>`.
    const staged = await chunksOf(stack).find({ import_id: jobId }).toArray();
    expect(staged.length).toBeGreaterThan(1);
    expect(staged.map((c) => c._id).sort()).toEqual(staged.map((_, n) => `${jobId}:${n}`).sort());

    workers = startWorkers(
      createServices(stack.config, createLogger('silent', 'test'), 'worker'),
      processors,
    );
    const done = await pollJob(firm.client, jobId, 120_000);
    expect(done.body).toMatchObject({ status: 'completed', imported: 5000 });
    // Deleted right after the record says completed (kept until then: a retry reads them).
    await eventually(async () => expect(await chunksOf(stack).countDocuments({ import_id: jobId })).toBe(0));
    await workers.stop();
    workers = undefined;
  }, 180_000);

  it('a staging that fails half-way is not accepted and leaves no piece behind', async () => {
    const rows = bigRows(3, 3_000_000);
    const parts = splitImportRows(rows);
    expect(parts.length).toBeGreaterThan(2);
    expect(JSON.parse(parts.join(''))).toEqual(rows);
    const ref = { importId: `imp_halfway${Date.now()}`, firm: 'firm-halfway' };
    // The third piece's _id is taken: its write fails after two pieces were written.
    await chunksOf(stack).insertOne({
      _id: `${ref.importId}:2`,
      import_id: 'someone else',
      firm: 'other',
      text: '',
      created_at: new Date(),
    });
    await expect(stageImportRows(stack.services.mongo.db, ref, parts)).rejects.toThrow();
    expect(await chunksOf(stack).countDocuments({ import_id: ref.importId })).toBe(0);
  });

  it('pieces never split a character: text beyond the BMP round-trips', () => {
    const rows = [{ name: '😀'.repeat(700_000), phone: '+12125550100' }];
    const parts = splitImportRows(rows);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(Buffer.from(part, 'utf8').toString('utf8')).toBe(part);
    expect(JSON.parse(parts.join(''))).toEqual(rows);
  });
});

/** An import's status as stored, and its slot in the firm's pending set (null when not held). */
const importWatch = (firm: string) => ({
  statusOf: async (id: string) =>
    (
      await stack.services.mongo.db
        .collection<{ _id: string; status: string }>(COLLECTIONS.contactImports)
        .findOne({ _id: id })
    )?.status,
  slotHeld: (id: string) =>
    stack.services.redis.zscore(redisKeys(stack.config).contactsImportsPending(firm), id),
});

describe('the per-firm cap on pending imports', () => {
  it('per-firm pending cap answers 429 with Retry-After; other firms go on; a finished import frees its slot', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const person = (i: number) => ({ phone: `+1310555${String(i).padStart(4, '0')}` });
    const first = await accepted(firm.client, firm.slug, [person(1)]);
    const second = await accepted(firm.client, firm.slug, [person(2)]);
    const refused = await firm.client.post('/api/contacts/import', {
      firmSlug: firm.slug,
      contacts: [person(3)],
    });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.error.message).toMatch(/2 contacts imports waiting/);
    // Nothing of the refused import was stored.
    expect(
      await stack.services.mongo.db
        .collection(COLLECTIONS.contactImports)
        .countDocuments({ firm: firm.slug }),
    ).toBe(2);
    await accepted(other.client, other.slug, [person(4)]);

    workers = startWorkers(
      createServices(stack.config, createLogger('silent', 'test'), 'worker'),
      processors,
    );
    for (const jobId of [first, second]) {
      expect((await pollJob(firm.client, jobId)).body).toMatchObject({ status: 'completed', imported: 1 });
    }
    const third = await accepted(firm.client, firm.slug, [person(3)]);
    expect((await pollJob(firm.client, third)).body).toMatchObject({ status: 'completed', imported: 1 });
    await workers.stop();
    workers = undefined;
  }, 120_000);

  it('an import that shows completed has given its slot back already: the next one is never refused for it', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const { statusOf, slotHeld } = importWatch(firm.slug);
    workers = startWorkers(
      createServices(stack.config, createLogger('silent', 'test'), 'worker'),
      processors,
    );
    // Watched as closely as the stores allow: the record first, then the slot. Held after the
    // record said completed, the slot would refuse a client that sends its next import at once.
    let looks = 0;
    for (let i = 0; i < 5; i += 1) {
      const id = await accepted(firm.client, firm.slug, [{ phone: `+1310556${String(i).padStart(4, '0')}` }]);
      for (;;) {
        const status = await statusOf(id);
        const held = await slotHeld(id);
        looks += 1;
        if (status === 'completed') {
          expect(held, `import ${i}: completed while its slot was held`).toBeNull();
          break;
        }
        expect(status).toBe('processing');
      }
    }
    expect(looks).toBeGreaterThan(5);
    await workers.stop();
    workers = undefined;
  }, 120_000);

  it('an import that shows failed has given its slot back already', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const { statusOf, slotHeld } = importWatch(firm.slug);
    for (let i = 0; i < 3; i += 1) {
      const id = await accepted(firm.client, firm.slug, [{ phone: `+1310557${String(i).padStart(4, '0')}` }]);
      expect(await slotHeld(id)).not.toBeNull();
      // Its job's last attempt failed: the processor gives it up (workers/processors/contacts.ts).
      let done = false;
      const failing = failContactImport(
        stack.services,
        { importId: id, firm: firm.slug },
        'the store kept failing',
      ).finally(() => {
        done = true;
      });
      while (!done) {
        const status = await statusOf(id);
        const held = await slotHeld(id);
        if (status === 'failed') expect(held, `import ${i}: failed while its slot was held`).toBeNull();
      }
      await failing;
      expect(await statusOf(id)).toBe('failed');
      expect(await slotHeld(id)).toBeNull();
    }
  });
});
