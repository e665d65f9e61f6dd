// A campaign call created but not yet dialled when its campaign is paused or cancelled: the call's
// own job looks at the campaign right before the dial. Paused, it parks with the campaign's other
// parked jobs and is dialled after the resume; cancelled, the call ends undialled
// (dial_blocked: campaign_cancelled) and its lead settles. Before, such a call was dialled whenever
// its job ran: a moment after the answer, or hours later when the dial gate had deferred it.
// Such a call places no lead: calls_placed counts the leads dialled, not the calls created.
// The calls queue is held here (BullMQ's queue pause) so that the call exists undialled for as
// long as the test needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { redisKeys } from '../../core/platform/redis-keys.js';
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
} from './support.js';

const SIM_CALL_MS = 300;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: String(SIM_CALL_MS) } });
});
afterAll(async () => {
  await stack?.services.queues.calls.resume();
  await stack?.stop();
});

/** A firm, its agent, and a launched campaign of `phones` whose calls exist, none dialled. */
async function campaignWithCallsUndialled(phones: string[]) {
  const firm = await createFirm(stack, { max_concurrent_calls: 5 });
  const agentId = await createAgent(firm.client, firm.slug);
  const created = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId,
    leads: phones.map((phone) => ({ phone })),
  });
  await stack.services.queues.calls.pause();
  await launch(firm.client, created.id);
  await eventually(
    async () => expect(await campaignCalls(stack, created.id)).toHaveLength(phones.length),
    30_000,
  );
  expect((await campaignCalls(stack, created.id)).every((c) => c.provider_call_id === null)).toBe(true);
  return { firm, id: created.id };
}

/** Every place-call job of these calls is parked (delayed), none waiting or running. */
async function placeCallsParked(callIds: string[]) {
  await eventually(async () => {
    const states = await Promise.all(callIds.map((id) => stack.services.queues.calls.getJobState(id)));
    expect(states).toEqual(callIds.map(() => 'delayed'));
  }, 30_000);
}

describe('a campaign call not yet dialled', () => {
  it('is held while its campaign is paused, parked with its jobs, and dialled after the resume', async () => {
    const phones = usPhones(2, 700);
    const { firm, id } = await campaignWithCallsUndialled(phones);
    const paused = await firm.client.post(`/api/leads/campaigns/${id}/pause`, {});
    expect(paused.status).toBe(200);
    await stack.services.queues.calls.resume();

    const calls = await campaignCalls(stack, id);
    await placeCallsParked(calls.map((c) => c._id));
    // Long enough for the calls to have been dialled and ended had they not been held.
    await sleep(SIM_CALL_MS * 6);
    expect(await simulatorDials(stack, phones)).toEqual([]);
    expect((await campaignCalls(stack, id)).map((c) => c.status)).toEqual(['registered', 'registered']);
    // Created, not dialled: no lead is placed yet.
    expect(await getCampaign(firm.client, id)).toMatchObject({ status: 'paused', calls_placed: 0 });
    // Parked among the campaign's jobs: the resume wakes them.
    const lot = await stack.services.redis.zrange(redisKeys(stack.config).campaignParked(id), '0', '-1');
    expect(lot.sort()).toEqual(calls.map((c) => `calls\t${c._id}`).sort());

    expect((await firm.client.post(`/api/leads/campaigns/${id}/resume`)).body.status).toBe('running');
    const done = await waitForCampaign(firm.client, id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_placed: 2, calls_completed: 2, calls_failed: 0 });
    expect((await simulatorDials(stack, phones)).map((d) => d.to_number).sort()).toEqual([...phones].sort());
  });

  it('ends undialled when its campaign is cancelled: dial_blocked, campaign_cancelled, its lead failed', async () => {
    const phones = usPhones(2, 720);
    const { firm, id } = await campaignWithCallsUndialled(phones);
    expect((await firm.client.post(`/api/leads/campaigns/${id}/cancel`)).body.status).toBe('cancelled');
    await stack.services.queues.calls.resume();

    await eventually(async () => {
      const calls = await campaignCalls(stack, id);
      expect(calls.map((c) => [c.status, c.disconnection_reason, c.dial_block_reason])).toEqual([
        ['error', 'dial_blocked', 'campaign_cancelled'],
        ['error', 'dial_blocked', 'campaign_cancelled'],
      ]);
    }, 30_000);
    await sleep(SIM_CALL_MS * 4);
    expect(await simulatorDials(stack, phones)).toEqual([]);
    await eventually(async () =>
      expect(await getCampaign(firm.client, id)).toMatchObject({
        status: 'cancelled',
        calls_failed: 2,
        calls_placed: 0,
      }),
    );
    // Nothing of it waits for a dial slot or a resume.
    expect(await stack.services.redis.zcard(redisKeys(stack.config).dialWaiters(firm.slug))).toBe(0);
    expect(await stack.services.redis.zcard(redisKeys(stack.config).campaignParked(id))).toBe(0);
  });

  it('listed on the do-not-call list before its dial: blocked there, and counted in skipped_by_reason', async () => {
    const phones = usPhones(2, 740);
    const { firm, id } = await campaignWithCallsUndialled(phones);
    const listed = await firm.client.post('/api/compliance/dnc', {
      firmSlug: firm.slug,
      phones: [phones[0]],
    });
    expect(listed.status).toBe(200);
    await stack.services.queues.calls.resume();
    const done = await waitForCampaign(firm.client, id, (c) => c.status === 'completed', 30_000);
    const calls = await campaignCalls(stack, id);
    const blocked = calls.find((c) => c.to_number === phones[0]);
    expect([blocked?.disconnection_reason, blocked?.dial_block_reason]).toEqual(['dial_blocked', 'dnc']);
    expect((await simulatorDials(stack, phones)).map((d) => d.to_number)).toEqual([phones[1]]);
    const shown = await getCampaign(firm.client, id);
    expect([done.calls_failed, shown.skipped_by_reason.dnc]).toEqual([1, 1]);
    // The blocked lead was never dialled: skipped, not placed.
    expect(done).toMatchObject({ calls_placed: 1, calls_completed: 1 });
  });
});
