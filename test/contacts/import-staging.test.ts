// Staged imports (docs/contacts.md#memory): a contacts import's rows are staged in MongoDB, not carried by
// its job, so a waiting import costs Redis a few hundred bytes; the staged pieces are deleted once it has
// completed; a staging that fails half-way leaves no piece; and one firm's imports waiting may hold
// only CONTACTS_IMPORT_MAX_PENDING_BYTES of staged rows and be only CONTACTS_IMPORT_MAX_PENDING
// many (429 with Retry-After beyond, naming the limit), each slot free again before its import
// shows completed or failed, and lapsing by itself when its release was lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { failContactImport } from '../../core/domain/contacts/import-record.js';
import {
  releaseImportSlot,
  SLOT_LAPSE_MS,
  stagedBytes,
  takeImportSlot,
} from '../../core/domain/contacts/import-slots.js';
import {
  splitImportRows,
  stageImportRows,
  type ImportChunkDoc,
} from '../../core/domain/contacts/import-staging.js';
import type { Workers } from '../../workers/runner.js';
import { createFirm, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { expectNoTwins, pollJob } from './support.js';

let stack: Stack;
let workers: Workers | undefined;
const MAX_PENDING = 3;
const MAX_PENDING_BYTES = 8192;

beforeAll(async () => {
  // Every import answers 202 at once; no worker runs until a test starts one. A firm's imports
  // waiting may be 3, holding 8 KiB of rows (one larger than that is let in alone: the large
  // imports below, each of a firm of its own).
  stack = await startStack({
    env: {
      CONTACTS_IMPORT_WAIT_MS: '0',
      CONTACTS_IMPORT_MAX_PENDING: String(MAX_PENDING),
      CONTACTS_IMPORT_MAX_PENDING_BYTES: String(MAX_PENDING_BYTES),
    },
  });
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

    workers = startInProcessWorkers(stack);
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

    workers = startInProcessWorkers(stack);
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

/** The firm's pending set: its members (`<job_id>:<bytes>`) and their scores (when each lapses). */
const pendingOf = async (firm: string): Promise<Array<[string, number]>> => {
  const key = redisKeys(stack.config).contactsImportsPending(firm);
  const flat = await stack.services.redis.zrange(key, '0', '-1', 'WITHSCORES');
  return Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, Number(flat[2 * i + 1])]);
};

/** An import's status as stored, and its slot in the firm's pending set (null when not held). */
const importWatch = (firm: string) => ({
  statusOf: async (id: string) =>
    (
      await stack.services.mongo.db
        .collection<{ _id: string; status: string }>(COLLECTIONS.contactImports)
        .findOne({ _id: id })
    )?.status,
  slotHeld: async (id: string) =>
    (await pendingOf(firm)).find(([member]) => member.startsWith(`${id}:`))?.[0] ?? null,
});

/** One row padded to stage about `bytes` (its notes), and the bytes its import stages exactly. */
const paddedImport = (i: number, bytes: number) => {
  const rows = [{ phone: `+1310558${String(i).padStart(4, '0')}`, notes: 'n'.repeat(bytes - 50) }];
  return { rows, bytes: stagedBytes(splitImportRows(rows)) };
};

const importsOfFirm = (firm: string) =>
  stack.services.mongo.db.collection(COLLECTIONS.contactImports).countDocuments({ firm });

describe('the per-firm limits on pending imports', () => {
  it('the bytes they hold: one that would pass the limit is 429 with Retry-After, nothing of it stored; smaller ones go on; finished ones free their bytes', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const [a, b, c] = [paddedImport(1, 3000), paddedImport(2, 3000), paddedImport(3, 3000)];
    expect(a.bytes + b.bytes).toBeLessThanOrEqual(MAX_PENDING_BYTES);
    expect(a.bytes + b.bytes + c.bytes).toBeGreaterThan(MAX_PENDING_BYTES);
    const first = await accepted(firm.client, firm.slug, a.rows);
    const second = await accepted(firm.client, firm.slug, b.rows);
    expect((await pendingOf(firm.slug)).map(([member]) => member).sort()).toEqual(
      [`${first}:${a.bytes}`, `${second}:${b.bytes}`].sort(),
    );
    const refused = await firm.client.post('/api/contacts/import', { firmSlug: firm.slug, contacts: c.rows });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.error.message).toMatch(/2 contacts imports waiting .* hold 5\.\d KiB of rows/);
    expect(refused.body.error.message).toMatch(/size limit of 8\.0 KiB/);
    // Nothing of the refused import was stored: no record, no piece, no slot.
    expect(await importsOfFirm(firm.slug)).toBe(2);
    expect(await chunksOf(stack).countDocuments({ firm: firm.slug })).toBe(2);
    expect(await pendingOf(firm.slug)).toHaveLength(2);
    // A small one still fits; another firm's imports are not counted.
    const small = await accepted(firm.client, firm.slug, [{ phone: '+13105580009' }]);
    await accepted(other.client, other.slug, c.rows);

    workers = startInProcessWorkers(stack);
    for (const jobId of [first, second, small]) {
      expect((await pollJob(firm.client, jobId)).body).toMatchObject({ status: 'completed', imported: 1 });
    }
    expect(await pendingOf(firm.slug)).toEqual([]);
    const third = await accepted(firm.client, firm.slug, c.rows);
    expect((await pollJob(firm.client, third)).body).toMatchObject({ status: 'completed', imported: 1 });
    await workers.stop();
    workers = undefined;
  }, 120_000);

  it('their number: one more than CONTACTS_IMPORT_MAX_PENDING, however small, is 429 with Retry-After; other firms go on; a finished import frees its slot', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const person = (i: number) => ({ phone: `+1310555${String(i).padStart(4, '0')}` });
    const first = await accepted(firm.client, firm.slug, [person(1)]);
    const second = await accepted(firm.client, firm.slug, [person(2)]);
    const third = await accepted(firm.client, firm.slug, [person(3)]);
    const refused = await firm.client.post('/api/contacts/import', {
      firmSlug: firm.slug,
      contacts: [person(4)],
    });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.error.message).toMatch(/has 3 contacts imports waiting .* limit on their number/);
    // Nothing of the refused import was stored.
    expect(await importsOfFirm(firm.slug)).toBe(3);
    await accepted(other.client, other.slug, [person(5)]);

    workers = startInProcessWorkers(stack);
    for (const jobId of [first, second, third]) {
      expect((await pollJob(firm.client, jobId)).body).toMatchObject({ status: 'completed', imported: 1 });
    }
    const fourth = await accepted(firm.client, firm.slug, [person(4)]);
    expect((await pollJob(firm.client, fourth)).body).toMatchObject({ status: 'completed', imported: 1 });
    await workers.stop();
    workers = undefined;
  }, 120_000);

  it('an import that shows completed has given its slot back already: the next one is never refused for it', async () => {
    expect(workers).toBeUndefined();
    const firm = await createFirm(stack);
    const { statusOf, slotHeld } = importWatch(firm.slug);
    workers = startInProcessWorkers(stack);
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

describe('the slots in Redis', () => {
  let n = 0;
  /** A firm of the test's own (the slots know firms by slug only). */
  const firmSlug = () => `slots-${Date.now()}-${(n += 1)}`;
  const take = (firm: string, id: string, bytes: number) => takeImportSlot(stack.services, firm, id, bytes);
  const refusal = (firm: string, id: string, bytes: number) =>
    take(firm, id, bytes).then(
      () => null,
      (err: unknown) => err as { status: number; headers?: Record<string, string>; message: string },
    );

  it('a release by job_id alone frees the bytes its import held', async () => {
    const firm = firmSlug();
    await take(firm, 'imp_big', MAX_PENDING_BYTES - 100);
    const refused = await refusal(firm, 'imp_next', 101);
    expect(refused).toMatchObject({ status: 429, headers: { 'Retry-After': '30' } });
    expect(refused?.message).toMatch(/size limit/);
    // It fits exactly.
    await take(firm, 'imp_fits', 100);
    expect((await pendingOf(firm)).map(([m]) => m).sort()).toEqual([
      `imp_big:${MAX_PENDING_BYTES - 100}`,
      'imp_fits:100',
    ]);

    await releaseImportSlot(stack.services, firm, 'imp_big');
    expect((await pendingOf(firm)).map(([m]) => m)).toEqual(['imp_fits:100']);
    await take(firm, 'imp_next', MAX_PENDING_BYTES - 100);
    // Repeating a release changes nothing; a job_id that prefixes another's does not release it.
    await releaseImportSlot(stack.services, firm, 'imp_big');
    await releaseImportSlot(stack.services, firm, 'imp_fit');
    expect((await pendingOf(firm)).map(([m]) => m).sort()).toEqual([
      'imp_fits:100',
      `imp_next:${MAX_PENDING_BYTES - 100}`,
    ]);
  });

  it('an import larger than the limit by itself is let in alone, never beside another', async () => {
    const firm = firmSlug();
    await take(firm, 'imp_small', 10);
    expect(await refusal(firm, 'imp_huge', MAX_PENDING_BYTES + 1)).toMatchObject({ status: 429 });
    await releaseImportSlot(stack.services, firm, 'imp_small');
    await take(firm, 'imp_huge', MAX_PENDING_BYTES + 1);
    expect(await refusal(firm, 'imp_small', 10)).toMatchObject({ status: 429 });
  });

  it('an entry lapses by itself SLOT_LAPSE_MS after it was taken, and the key with its last entry', async () => {
    const firm = firmSlug();
    const key = redisKeys(stack.config).contactsImportsPending(firm);
    const before = Date.now();
    await take(firm, 'imp_lost', MAX_PENDING_BYTES);
    const after = Date.now();
    const [entry] = await pendingOf(firm);
    const [member, lapsesAt] = entry!;
    expect(member).toBe(`imp_lost:${MAX_PENDING_BYTES}`);
    expect(lapsesAt).toBeGreaterThanOrEqual(before + SLOT_LAPSE_MS);
    expect(lapsesAt).toBeLessThanOrEqual(after + SLOT_LAPSE_MS);
    const ttl = await stack.services.redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(SLOT_LAPSE_MS);
    expect(await refusal(firm, 'imp_next', 1)).toMatchObject({ status: 429 });

    // Its release lost, the hour goes by (its lapse moved to the past): the next take drops it.
    await stack.services.redis.zadd(key, 'XX', Date.now() - 1, member);
    await take(firm, 'imp_next', MAX_PENDING_BYTES);
    expect((await pendingOf(firm)).map(([m]) => m)).toEqual([`imp_next:${MAX_PENDING_BYTES}`]);
  });

  it('an entry from before entries carried their size counts as an import of 16 MiB; its release by job_id removes it', async () => {
    const firm = firmSlug();
    const key = redisKeys(stack.config).contactsImportsPending(firm);
    await stack.services.redis.zadd(key, Date.now() + 60_000, 'imp_old');
    const refused = await refusal(firm, 'imp_new', 10);
    expect(refused).toMatchObject({ status: 429 });
    expect(refused?.message).toMatch(/hold 16\.0 MiB of rows/);
    await releaseImportSlot(stack.services, firm, 'imp_old');
    expect(await pendingOf(firm)).toEqual([]);
    await take(firm, 'imp_new', 10);
  });
});
