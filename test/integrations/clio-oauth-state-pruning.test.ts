// Clio connect states no callback used (the consent page closed, the link never followed), and
// callbacks' tokens never confirmed, are deleted once their 10 minutes have passed: the maintenance queue, scheduled by every worker
// process, prunes them hourly (FerretDB has no TTL indexes). A state still valid is kept, so its
// callback still works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { PRUNE_CLIO_OAUTH_STATES } from '../../workers/processors/maintenance.js';
import { eventually } from '../helpers/eventually.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => stack?.stop());

describe('Clio connect state pruning', () => {
  it('is scheduled hourly by the worker', async () => {
    await eventually(async () => {
      const schedulers = await stack.services.queues.maintenance.getJobSchedulers();
      expect(schedulers).toEqual(
        expect.arrayContaining([expect.objectContaining({ key: PRUNE_CLIO_OAUTH_STATES, every: 3600_000 })]),
      );
    });
  });

  it('deletes the states and the confirmations that expired and keeps the valid ones', async () => {
    const states = stack.services.mongo.db.collection(COLLECTIONS.clioOAuthStates);
    const confirmations = stack.services.mongo.db.collection(COLLECTIONS.clioOAuthConfirmations);
    const minute = 60_000;
    const state = (id: string, expiresInMs: number) => ({
      _id: id as never,
      firm: 'f',
      region: 'us',
      base_url: 'https://app.clio.com',
      expires_at: new Date(Date.now() + expiresInMs),
      created_at: new Date(Date.now() + expiresInMs - 10 * minute),
    });
    // The scheduler's first run comes at once when the worker starts: let it finish first, so the
    // states below are pruned by the job this test adds (and its count is this test's).
    const maintenance = stack.services.queues.maintenance;
    await eventually(async () => {
      const done = await maintenance.getJobs(['completed']);
      expect(done.map((j) => j.name)).toContain(PRUNE_CLIO_OAUTH_STATES);
      expect(await maintenance.getJobCountByTypes('waiting', 'active', 'prioritized')).toBe(0);
    });
    await states.insertMany([
      state('expired-long-ago', -24 * 60 * minute),
      state('expired-just-now', -1000),
      state('still-valid', 5 * minute),
    ]);
    // A callback's tokens left unconfirmed (the confirmation page closed).
    await confirmations.insertMany([
      state('unconfirmed-expired', -1000),
      state('unconfirmed-valid', 5 * minute),
    ]);

    const job = await maintenance.add(PRUNE_CLIO_OAUTH_STATES, {});
    await eventually(async () => expect(await job.getState()).toBe('completed'));
    expect((await maintenance.getJob(job.id!))?.returnvalue).toEqual({ deleted: 3 });
    expect((await states.find({}).toArray()).map((s) => s._id)).toEqual(['still-valid']);
    expect((await confirmations.find({}).toArray()).map((s) => s._id)).toEqual(['unconfirmed-valid']);
  });
});
