// A launch counts and calls the leads that are callable when it launches: a firm's
// allowed_call_countries changed while the campaign was a draft (narrowed by its own token,
// widened by the platform) decide calls_queued, and exactly that many calls are created; a
// phone the launch left out is not touched by a later do-not-call addition either.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { dialDecisionsCollection } from '../../core/domain/compliance/dial-decisions.js';
import { campaignCallId, campaignsCollection } from '../../core/domain/campaigns/campaign-store.js';
import { JOBS } from '../../jobs/table.js';
import { enqueue } from '../../jobs/define.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  waitForCampaign,
} from './support.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
});

const US = '+12125550101';
const CA = '+14165550123';
const GB = '+442071234567';

/** A draft campaign of one US lead and one lead of `other`, its firm's `settings` given. */
async function draftOf(other: string, settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, settings); // US and CA by default
  const agent = await createAgent(firm.client, firm.slug);
  const created = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId: agent,
    leads: [{ phone: US }, { phone: other }],
  });
  return { firm, created };
}

/** draftOf, then the firm's countries changed (by `by`, to `countries`) before anything is launched. */
async function draftThenCountries(
  other: string,
  countries: string[],
  by: 'firm' | 'platform',
  settings: Record<string, unknown> = {},
) {
  const { firm, created } = await draftOf(other, settings);
  const client = by === 'firm' ? firm.client : stack.admin;
  const changed = await client.patch(`/api/firms/${firm.slug}`, {
    settings: { allowed_call_countries: countries },
  });
  expect(changed.status, changed.text).toBe(200);
  return { firm, created };
}

describe('allowed_call_countries changed between the campaign’s creation and its launch', () => {
  it('narrowed (CA taken out): calls_queued leaves the CA lead out and one call is created', async () => {
    const { firm, created } = await draftThenCountries(CA, ['US'], 'firm');
    expect(await launch(firm.client, created.id)).toBe(1);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 1, calls_placed: 1, calls_completed: 1 });
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number)).toEqual([US]);
  });

  it('widened (GB added by the platform): calls_queued counts the GB lead and it is called', async () => {
    const { firm, created } = await draftThenCountries(GB, ['US', 'CA', 'GB'], 'platform');
    expect(await launch(firm.client, created.id)).toBe(2);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 2, calls_placed: 2, calls_completed: 2 });
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number).sort()).toEqual([US, GB].sort());
  });
});

describe('a rolling deploy: leads added by the release before this one', () => {
  it('a launch counts the phones an older release added (which kept no count by destination)', async () => {
    const { firm, created } = await draftOf(CA);
    // What the campaign holds when this release made it (an empty count by destination) and the
    // release before added its leads: their phones, pages and `callable`, and no count by
    // destination (that release does not know the field and leaves it as it was).
    await campaignsCollection(stack.services.mongo.db).updateOne(
      { _id: created.id },
      { $set: { callable_by_destination: {} } },
    );

    expect(await launch(firm.client, created.id)).toBe(2);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 2, calls_placed: 2, calls_completed: 2 });
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number).sort()).toEqual([US, CA].sort());
  });

  it('a phone the launch left out, queued all the same by an older release’s fan-out, is neither called nor counted', async () => {
    const { firm, created } = await draftThenCountries(CA, ['US'], 'firm');
    expect(await launch(firm.client, created.id)).toBe(1);
    // The release before this one fans out every phone of the pages (it knows no
    // launch_destinations): the CA phone's campaign-call job too, as its fan-out adds it.
    await enqueue(stack.services.queues, JOBS.campaignCall, {
      campaignId: created.id,
      firm: firm.slug,
      phone: CA,
      attempt: 1,
    });

    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 1, calls_placed: 1, calls_completed: 1, calls_failed: 0 });
    expect(done.skipped_by_reason).toMatchObject({ country: 0 });
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number)).toEqual([US]);
  });
});

describe('a do-not-call addition after such a launch', () => {
  it('blocks the queued call of the counted phone only: the phone left out stays out of the counts', async () => {
    // The service's clock stands at 06:00 UTC today and the firm calls 09:00–11:00 UTC: the
    // queued call waits (delayed) while the numbers are listed.
    const sixAm = new Date(new Date().toISOString().slice(0, 10) + 'T06:00:00Z').getTime();
    clock.set(sixAm);
    try {
      const { firm, created } = await draftThenCountries(CA, ['US'], 'firm', {
        timezone: 'UTC',
        calling_window: { start: '09:00', end: '11:00', days: [1, 2, 3, 4, 5, 6, 7] },
      });
      expect(await launch(firm.client, created.id)).toBe(1);
      const decisions = () => dialDecisionsCollection(stack.services.mongo.db);
      await eventually(async () => {
        expect(await decisions().countDocuments({ campaign_id: created.id, answer: 'defer' })).toBe(1);
      }, 30_000);

      const listed = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [US, CA] });
      expect(listed.status, listed.text).toBe(200);
      // The firm's sweep has run to its end (it records its blocks before it settles the leads).
      await eventually(async () => {
        const queue = stack.services.queues.campaigns;
        const ofFirm = (jobs: Array<{ name: string; data: { firm?: string } } | undefined>) =>
          jobs.filter((j) => j?.name === JOBS.dncSweep.name && j.data.firm === firm.slug);
        expect(ofFirm(await queue.getJobs(['active', 'waiting', 'prioritized', 'delayed']))).toEqual([]);
        expect(ofFirm(await queue.getCompleted()).length).toBeGreaterThanOrEqual(1);
      }, 30_000);

      const blocks = await decisions().find({ campaign_id: created.id, answer: 'block' }).toArray();
      expect(blocks.map((d) => d.call_id)).toEqual([campaignCallId(created.id, US, 1)]);
      const campaign = await getCampaign(firm.client, created.id);
      expect(campaign).toMatchObject({ status: 'completed', calls_queued: 1, calls_failed: 1 });
      expect(campaign.skipped_by_reason).toMatchObject({ dnc: 1, country: 0 });
    } finally {
      clock.reset();
    }
  });
});
