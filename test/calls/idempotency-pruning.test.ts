// Idempotency-Key records expire after their 24 h window: the maintenance queue, scheduled by
// every worker process, deletes them (FerretDB has no TTL indexes).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { PRUNE_IDEMPOTENCY_KEYS } from '../../workers/processors/maintenance.js';
import { eventually } from '../helpers/eventually.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => stack?.stop());

describe('Idempotency-Key pruning', () => {
  it('is scheduled hourly by the worker', async () => {
    await eventually(async () => {
      const schedulers = await stack.services.queues.maintenance.getJobSchedulers();
      expect(schedulers).toEqual(
        expect.arrayContaining([expect.objectContaining({ key: PRUNE_IDEMPOTENCY_KEYS, every: 3600_000 })]),
      );
    });
  });

  it('deletes key records older than 24 h and keeps the rest', async () => {
    const keys = stack.services.mongo.db.collection(COLLECTIONS.idempotencyKeys);
    const hour = 3600_000;
    const doc = (id: string, ageMs: number) => ({
      _id: id as never,
      scope: 'call',
      firm: 'f',
      key: id,
      resource_id: `call_${id}`,
      state: 'done',
      created_at: new Date(Date.now() - ageMs),
      updated_at: new Date(Date.now() - ageMs),
    });
    // The scheduler's first run comes at once when the worker starts: let it finish first, so the
    // records below are pruned by the job this test adds (and its count is this test's). Its own
    // run: the queue's other schedulers (the dial slots' reaper, ...) start their runs beside it.
    const maintenance = stack.services.queues.maintenance;
    await eventually(async () => {
      const completed = await maintenance.getJobs(['completed']);
      expect(completed.filter((j) => j.name === PRUNE_IDEMPOTENCY_KEYS).length).toBeGreaterThanOrEqual(1);
      expect(await maintenance.getJobCountByTypes('waiting', 'active', 'prioritized')).toBe(0);
    });
    await keys.insertMany([doc('old-1', 25 * hour), doc('old-2', 48 * hour), doc('fresh', 23 * hour)]);

    const job = await stack.services.queues.maintenance.add(PRUNE_IDEMPOTENCY_KEYS, {});
    await eventually(async () => expect(await job.getState()).toBe('completed'));
    expect((await stack.services.queues.maintenance.getJob(job.id!))?.returnvalue).toEqual({ deleted: 2 });
    expect((await keys.find({}).toArray()).map((k) => k._id)).toEqual(['fresh']);
  });
});
