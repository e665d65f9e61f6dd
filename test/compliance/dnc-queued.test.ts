// Numbers put on the do-not-call list reach the calls already queued for them
// (docs/compliance.md#queued-calls): a campaign's calls wait for the firm's calling window (each
// job delayed until it opens); numbers of some of them are listed by the API and by a CSV import;
// before any job comes due each listed number's call is blocked — its request-stage `block`
// decision (reason dnc), the campaign's failed count and skipped_by_reason — and once the window
// opens none of them is dialled (the simulator's dial log), not even one taken off the list
// meanwhile, while every other lead is. An opt-out said in a campaign call reaches the number's call
// queued in another campaign, and the call it was said in still counts as a conversation.
import { jobId } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { CAPPED, CAPPED_ATTEMPTS } from '../../jobs/backoff.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { dialDecisionsCollection } from '../../core/domain/compliance/dial-decisions.js';
import { campaignCallId } from '../../core/domain/campaigns/campaign-store.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  simulatorDials,
  usPhones,
  waitForCampaign,
} from '../campaigns/support.js';

const QUEUED = 16;
// One number by the API (looked up by its campaign phone's _id), five by CSV (more numbers than the
// campaign has phone pages: its page is read instead).
const LISTED_BY_API = 1;
const LISTED_BY_CSV = 5;
const HOUR = 3600_000;

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: '100' } });
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
});

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
/** 06:00 UTC today: the service's clock stands there while the firms' windows (09:00–11:00) are closed. */
const sixAmToday = () => new Date(new Date().toISOString().slice(0, 10) + 'T06:00:00Z').getTime();
const closedUntilNine = () => ({
  start: hhmm(sixAmToday() + 3 * HOUR),
  end: hhmm(sixAmToday() + 5 * HOUR),
  days: [1, 2, 3, 4, 5, 6, 7],
});
const decisions = () => dialDecisionsCollection(stack.services.mongo.db);

/**
 * The firm's do-not-call sweeps (one per addition) have run to their end: at least `completed` of
 * them completed, none waiting, running or to be retried. A sweep records a call's block decision
 * before it settles the call's lead: the campaign's counts are final only once its sweep is done.
 */
async function sweepsDone(firm: string, completed: number): Promise<void> {
  const queue = stack.services.queues.campaigns;
  const ofFirm = (jobs: Array<{ name: string; data: { firm?: string } } | undefined>) =>
    jobs.filter((j) => j?.name === JOBS.dncSweep.name && j.data.firm === firm);
  await eventually(async () => {
    const unsettled = ofFirm(await queue.getJobs(['active', 'waiting', 'prioritized', 'delayed']));
    expect(unsettled, 'do-not-call sweeps not yet completed').toEqual([]);
    expect(ofFirm(await queue.getCompleted()).length).toBeGreaterThanOrEqual(completed);
  }, 30_000);
}

describe('a do-not-call addition and the calls queued for its numbers', () => {
  it('blocks them before their jobs come due; none is dialled when they do, the others are', async () => {
    // The service's clock stands at 06:00 UTC today; the firm calls 09:00–11:00 UTC: every job
    // waits, delayed until 09:00 on that clock (three hours of wall time).
    clock.set(sixAmToday());
    const firm = await createFirm(stack, {
      timezone: 'UTC',
      calling_window: closedUntilNine(),
      max_concurrent_calls: 50,
    });
    const agentId = await createAgent(firm.client, firm.slug);
    const phones = usPhones(QUEUED, 3000);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    expect(await launch(firm.client, created.id)).toBe(QUEUED);
    // Every call queued: each job asked the gate once (deferred to the opening) and now waits.
    await eventually(async () => {
      expect(await stack.services.queues.campaigns.getDelayedCount()).toBe(QUEUED);
      expect(await decisions().countDocuments({ campaign_id: created.id, answer: 'defer' })).toBe(QUEUED);
    }, 30_000);

    const byApi = phones.slice(4, 4 + LISTED_BY_API);
    const byCsv = phones.slice(10, 10 + LISTED_BY_CSV);
    const listed = [...byApi, ...byCsv];
    const added = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: byApi });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.added).toBe(LISTED_BY_API);
    const imported = await firm.client.post('/api/compliance/dnc-import', {
      firmSlug: firm.slug,
      csv: ['phone', ...byCsv].join('\n'),
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body.added).toBe(LISTED_BY_CSV);

    // Blocked while their jobs still wait: one request-stage block per listed number, for the
    // call its job would make.
    const blocks = await eventually(async () => {
      const found = await decisions().find({ campaign_id: created.id, answer: 'block' }).toArray();
      expect(found.length).toBe(listed.length);
      return found;
    }, 30_000);
    expect(blocks.map((d) => d.call_id).sort()).toEqual(
      listed.map((phone) => campaignCallId(created.id, phone, 1)).sort(),
    );
    expect(
      blocks.every((d) => d.stage === 'request' && d.reason === 'dnc' && d._id === `${d.call_id}:request`),
    ).toBe(true);
    // The two additions' sweeps done: each recorded its blocks, then settled their leads.
    await sweepsDone(firm.slug, 2);
    // A sweep's failures are the service's own: it outlasts an outage of about an hour (retried at
    // most 5 s apart), not given up after 8 attempts (about 2 minutes), its dnc.added events lost.
    const sweeps = (await stack.services.queues.campaigns.getCompleted()).filter(
      (j) => j.name === JOBS.dncSweep.name && j.data.firm === firm.slug,
    );
    for (const sweep of sweeps) {
      expect(sweep.opts).toMatchObject({ attempts: CAPPED_ATTEMPTS, backoff: { type: CAPPED } });
    }
    expect(await stack.services.queues.campaigns.getDelayedCount()).toBe(QUEUED);
    expect(await campaignCalls(stack, created.id)).toEqual([]);
    const counted = await getCampaign(firm.client, created.id);
    expect(counted.calls_failed, JSON.stringify(counted)).toBe(listed.length);
    expect(counted.calls_placed).toBe(0);
    expect(counted.skipped_by_reason.dnc).toBe(listed.length);

    // One of them is taken off the list before the opening: its call stays blocked (the lead was
    // settled when it was blocked).
    const removed = await stack.admin.delete(
      `/api/compliance/dnc/${encodeURIComponent(byApi[0]!)}?firmSlug=${firm.slug}`,
    );
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);

    // The window opens: the service's clock moves inside it and the waiting jobs come due now.
    clock.shift(3 * HOUR + 10 * 60_000);
    await stack.services.queues.campaigns.promoteJobs();
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 60_000);
    expect(done.calls_failed).toBe(listed.length);
    expect(done.skipped_by_reason.dnc).toBe(listed.length);

    const dialled = new Set((await simulatorDials(stack, phones)).map((d) => d.to_number));
    expect(listed.filter((phone) => dialled.has(phone))).toEqual([]);
    expect(phones.filter((phone) => !listed.includes(phone) && !dialled.has(phone))).toEqual([]);
    // No call was even registered for a listed number, and each has its one block, no allow.
    const calls = await campaignCalls(stack, created.id);
    expect(calls.filter((c) => listed.includes(c.to_number!))).toEqual([]);
    expect(
      await decisions().countDocuments({
        campaign_id: created.id,
        phone: { $in: listed },
        answer: { $ne: 'defer' },
      }),
    ).toBe(listed.length);
  }, 120_000);
  it('an opt-out said in a campaign call blocks the number queued in another campaign; the call it was said in counts as a conversation', async () => {
    clock.set(sixAmToday());
    const firm = await createFirm(stack, { timezone: 'UTC', calling_window: closedUntilNine() });
    const agentId = await createAgent(firm.client, firm.slug);
    // The simulated callee of a number ending 3333 says "Please stop calling me".
    const optingOut = '+14155553333';
    const queued = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: [{ phone: optingOut }, { phone: '+14155550150' }],
    });
    await launch(firm.client, queued.id);
    await eventually(async () => {
      expect(await decisions().countDocuments({ campaign_id: queued.id, answer: 'defer' })).toBe(2);
      // Delayed, not only decided: a job that computed its delay after the clock's shift below
      // would find the window open and call.
      for (const phone of [optingOut, '+14155550150']) {
        const job = await stack.services.queues.campaigns.getJob(jobId('cc', queued.id, phone, '1'));
        expect(await job?.getState()).toBe('delayed');
      }
    }, 30_000);

    // The window opens for what comes now; the queued campaign's jobs stay delayed.
    clock.shift(3 * HOUR + 10 * 60_000);
    const calling = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: [{ phone: optingOut }],
    });
    await launch(firm.client, calling.id);
    const done = await waitForCampaign(firm.client, calling.id, (c) => c.status === 'completed', 30_000);
    expect(done.calls_completed, JSON.stringify(done)).toBe(1);
    expect(done.calls_failed).toBe(0);
    expect(done.skipped_by_reason.dnc).toBe(0);

    const block = await eventually(async () => {
      const found = await decisions().findOne({ _id: `${campaignCallId(queued.id, optingOut, 1)}:request` });
      expect(found).not.toBeNull();
      return found!;
    }, 30_000);
    expect([block.answer, block.reason]).toEqual(['block', 'dnc']);
    // The opt-out's sweep, which recorded the block, done: the lead is settled.
    await sweepsDone(firm.slug, 1);
    const counted = await getCampaign(firm.client, queued.id);
    expect([counted.calls_failed, counted.skipped_by_reason.dnc]).toEqual([1, 1]);
    expect(await campaignCalls(stack, queued.id)).toEqual([]);
  });
});
