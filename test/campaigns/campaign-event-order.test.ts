// A campaign's events reach its endpoints launched first (docs/events.md#campaignlaunched), also
// when its pause or its completion comes before the launch's fan-out job, which records
// campaign.launched, has run: a pause answered at once, or a do-not-call sweep that settles every
// lead first. Endpoints get one subject's events in the order they were recorded; before, such
// a campaign's endpoint heard `campaign.paused` or `campaign.completed`, then `campaign.launched`.
// The stack has no workers until the test has made the pause or run the sweep, so the fan-out
// job waits as it would on a busy queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from 'bullmq';
import { JOBS } from '../../jobs/table.js';
import { processors } from '../../workers/processors/index.js';
import type { Workers } from '../../workers/runner.js';
import { createFirm, startInProcessWorkers, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';
import { createAgent, createCampaign, getCampaign, launch, usPhones } from './support.js';

let stack: Stack;
let receiver: WebhookReceiver;
let workers: Workers | undefined;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startStack();
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
  await receiver?.close();
});

/** A firm whose endpoint (at `path`) takes campaign.*, and its launched campaign of `phones`. */
async function launchedCampaign(path: string, phones: string[]) {
  const firm = await createFirm(stack);
  const endpoint = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: receiver.url(path),
    events: ['campaign.*'],
  });
  expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(200);
  const agentId = await createAgent(firm.client, firm.slug);
  const { id } = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId,
    purpose: 'informational',
    leads: phones.map((phone) => ({ phone })),
  });
  await launch(firm.client, id);
  return { firm, id };
}

/** The campaign events `path` received, by type, in the order they arrived (each once). */
async function deliveredTypes(path: string, count: number): Promise<Array<{ type: string; data: any }>> {
  return eventually(async () => {
    const seen = new Set<string>();
    const bodies = receiver.accepted(path).flatMap((r) => {
      const id = r.headers['webhook-id']!;
      if (seen.has(id)) return [];
      seen.add(id);
      return [JSON.parse(r.body) as { type: string; data: any }];
    });
    expect(bodies.map((b) => b.type)).toHaveLength(count);
    return bodies;
    // A later event's delivery waits behind an earlier one of the campaign that is due again (the
    // fan-out records campaign.launched again while that event's own fan-out job is running): it
    // has that job run again, and looks again at the latest after LANE_SAFETY_MS (30 s).
  }, 90_000);
}

describe('campaign.launched comes first', () => {
  it('before a pause answered before the fan-out ran: launched, then paused', async () => {
    const { firm, id } = await launchedCampaign('/paused', usPhones(2, 800));
    const paused = await firm.client.post(`/api/leads/campaigns/${id}/pause`);
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);

    workers ??= startInProcessWorkers(stack);
    const bodies = await deliveredTypes('/paused', 2);
    expect(bodies.map((b) => b.type)).toEqual(['campaign.launched', 'campaign.paused']);
    // The launch's record: the campaign as launched, not as the pause left it.
    expect(bodies[0]!.data).toMatchObject({ id, status: 'running', paused_reason: null });
    expect(bodies[1]!.data).toMatchObject({ id, status: 'paused', paused_reason: { code: 'manual' } });
  });

  it('before a completion by a do-not-call sweep that settled every lead first: launched, then completed', async () => {
    await workers?.stop();
    workers = undefined;
    const phones = usPhones(2, 820);
    const { firm, id } = await launchedCampaign('/completed', phones);
    const listed = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    // The addition's sweep, run here while the launch's fan-out job still waits.
    const sweeps = (await stack.services.queues.campaigns.getJobs(['waiting'])).filter(
      (j) => j.name === JOBS.dncSweep.name && j.data.firm === firm.slug,
    );
    expect(sweeps).toHaveLength(1);
    await processors.dncSweep(sweeps[0]!, {
      services: stack.services,
      worker: undefined as unknown as Worker,
      token: undefined,
      attempt: { lastAttempt: false },
    });
    expect(await getCampaign(firm.client, id)).toMatchObject({ status: 'completed', calls_failed: 2 });

    workers = startInProcessWorkers(stack);
    const bodies = await deliveredTypes('/completed', 2);
    expect(bodies.map((b) => b.type)).toEqual(['campaign.launched', 'campaign.completed']);
    expect(bodies[0]!.data).toMatchObject({ id, status: 'running' });
    expect(bodies[1]!.data).toMatchObject({ id, status: 'completed', skipped_by_reason: { dnc: 2 } });
    // The fan-out ran after: its launch recorded nothing new, and it added no call job for the
    // leads the sweep had settled.
    const fanout = await eventually(async () => {
      const fanouts = (await stack.services.queues.campaigns.getCompleted()).filter(
        (j) => j.name === JOBS.campaignFanout.name && j.data.campaignId === id,
      );
      expect(fanouts).toHaveLength(1);
      return fanouts[0]!;
    }, 30_000);
    expect(fanout.returnvalue).toMatchObject({ outcome: 'completed', added: 0 });
    const callJobs = (
      await stack.services.queues.campaigns.getJobs(['completed', 'waiting', 'prioritized', 'delayed'])
    ).filter((j) => j.name === JOBS.campaignCall.name && j.data.campaignId === id);
    expect(callJobs).toEqual([]);
    expect(receiver.accepted('/completed').map((r) => JSON.parse(r.body).type)).toEqual([
      'campaign.launched',
      'campaign.completed',
    ]);
  });
});
