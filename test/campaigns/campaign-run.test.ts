// Launched campaigns running on real workers, Redis and FerretDB, with the simulator as voice
// provider (numbers ending 0000 are not answered, 9999 fail at the provider): one call per
// distinct callable phone through create-outbound-call's path, per-firm pacing that never slows
// another firm, calling windows in the lead's time zone, retries of not_connected leads, pause,
// resume and cancel.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { clock } from '../../core/platform/clock.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { nextCallTime } from '../../core/domain/pacing/calling-window.js';
import { enqueue, jobId } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { CAPPED, CAPPED_ATTEMPTS, CAPPED_MAX_MS } from '../../jobs/backoff.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import {
  callsOf,
  campaignCalls,
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  maxOverlap,
  simulatorDials,
  usPhones,
  waitForCampaign,
} from './support.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { launchFanoutJob } from '../../core/domain/campaigns/campaigns.js';

const SIM_CALL_MS = 300;
const RETRY_DELAY_MS = 700;

let stack: Stack;
/** The campaign launched before its calling window opens (see launchBeforeWindow). */
let beforeWindow: Awaited<ReturnType<typeof launchBeforeWindow>>;

beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { SIM_CALL_MS: String(SIM_CALL_MS), CAMPAIGN_RETRY_DELAY_MS: String(RETRY_DELAY_MS) },
  });
  // Launched first, so that the wait for its window (30 s ahead on the service's clock) goes on
  // while the other tests run; its test, last, checks what was seen here and the calls placed since.
  beforeWindow = await launchBeforeWindow();
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
});

async function firmWithAgent(settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, settings);
  return { ...firm, agentId: await createAgent(firm.client, firm.slug) };
}

/**
 * No campaign job is running, and every call of the campaign has finished or is held undialled,
 * its place-call job parked: a job that had taken its last look before a pause or cancel creates
 * its call a moment after the answer (a loaded machine can take a while between that look and the
 * call's record), and that call's own look before its dial holds it (cancelled: ends it).
 */
async function settledCalls(campaignId: string) {
  return eventually(async () => {
    expect(await stack.services.queues.campaigns.getActiveCount()).toBe(0);
    const calls = await campaignCalls(stack, campaignId);
    for (const call of calls.filter((c) => !c.finished)) {
      expect(call.provider_call_id, `${call._id} was dialled after the pause`).toBeNull();
      expect(await stack.services.queues.calls.getJobState(call._id)).toBe('delayed');
    }
    return calls;
  }, 30_000);
}

/** How many of these calls reached the provider (one held, or ended, before its dial did not). */
const dialledOf = (calls: Array<{ provider_call_id: string | null }>) =>
  calls.filter((c) => c.provider_call_id !== null).length;

describe('a launched campaign', () => {
  it('places exactly one call per callable phone, through the create-outbound-call path, and completes', async () => {
    const firm = await firmWithAgent({ max_concurrent_calls: 3 });
    const answered = usPhones(4, 10);
    const failing = '+12125559999'; // refused by the simulated carrier: the call ends as error
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: [
        ...answered.map((phone, i) => ({ phone, first_name: `Lead${i}`, case_type: 'auto accident' })),
        { phone: answered[0], first_name: 'Twice' },
        { phone: failing },
        { phone: '+442071234567' },
        { first_name: 'No phone' },
      ],
    });
    expect(await launch(firm.client, created.id)).toBe(5);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 5, calls_placed: 5, calls_completed: 4, calls_failed: 1 });

    const calls = await campaignCalls(stack, created.id);
    expect(calls).toHaveLength(5);
    expect(calls.map((c) => c.to_number).sort()).toEqual([...answered, failing].sort());
    const first = calls.find((c) => c.to_number === answered[0])!;
    expect(first).toMatchObject({
      firm: firm.slug,
      agent_id: firm.agentId,
      direction: 'outbound',
      status: 'ended',
    });
    expect(first.dynamic_variables).toMatchObject({ first_name: 'Lead0', case_type: 'auto accident' });
    expect(calls.find((c) => c.to_number === failing)?.status).toBe('error');
    // get-call shows the campaign; the simulator placed each answered number once.
    const viaApi = await firm.client.get(`/api/v2/get-call/${first._id}`);
    expect(viaApi.body.campaign_id).toBe(created.id);
    const dials = await simulatorDials(stack, [...answered, failing]);
    expect(dials.map((d) => d.to_number).sort()).toEqual([...answered].sort());
  });

  it('an explicit purpose "marketing" wins over this stack’s widened default: the lead without consent is skipped, not dialled', async () => {
    const firm = await firmWithAgent();
    const [consented, bare] = usPhones(2, 900);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      purpose: 'marketing',
      leads: [
        {
          phone: consented,
          consent: {
            kind: 'written',
            text: 'I agree to calls about my case.',
            obtained_at: '2026-01-05T10:00:00Z',
            source: 'web_form',
          },
        },
        { phone: bare },
      ],
    });
    expect(await launch(firm.client, created.id)).toBe(2);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({
      purpose: 'marketing',
      calls_queued: 2,
      calls_completed: 1,
      calls_failed: 1,
    });
    expect(done.skipped_by_reason.no_consent).toBe(1);
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number)).toEqual([consented]);
    expect((await simulatorDials(stack, [consented!, bare!])).map((d) => d.to_number)).toEqual([consented]);
  });

  it('never has more than max_concurrent_calls (2) calls of a firm at once, while another firm’s call goes through at once', async () => {
    const busy = await firmWithAgent({ max_concurrent_calls: 2 });
    const other = await firmWithAgent({ max_concurrent_calls: 2 });
    const busyPhones = usPhones(10, 100);
    const big = await createCampaign(busy.client, {
      firmSlug: busy.slug,
      agentId: busy.agentId,
      leads: busyPhones.map((phone) => ({ phone })),
    });
    const small = await createCampaign(other.client, {
      firmSlug: other.slug,
      agentId: other.agentId,
      leads: [{ phone: '+13125550142' }],
    });
    expect(await launch(busy.client, big.id)).toBe(10);
    expect(await launch(other.client, small.id)).toBe(1);
    await waitForCampaign(other.client, small.id, (c) => c.status === 'completed');
    const busyNow = await getCampaign(busy.client, big.id);
    await waitForCampaign(busy.client, big.id, (c) => c.status === 'completed');

    const calls = await campaignCalls(stack, big.id);
    expect(calls).toHaveLength(10);
    const intervals = calls.map((c) => [c.created_at.getTime(), c.end_timestamp!] as [number, number]);
    expect(maxOverlap(intervals)).toBeLessThanOrEqual(2);
    // The other firm's one call did not wait for the big campaign: it was over while the big
    // campaign still had leads to call.
    const [otherCall] = await campaignCalls(stack, small.id);
    const lastBusyStart = Math.max(...intervals.map(([s]) => s));
    expect(otherCall!.end_timestamp!).toBeLessThan(lastBusyStart);
    expect(busyNow.calls_completed).toBeLessThan(10);
  });

  it('paces create-outbound-call too: with max_concurrent_calls 1, a second call waits for the first to end', async () => {
    const firm = await firmWithAgent({ max_concurrent_calls: 1 });
    const ids: string[] = [];
    for (const toNumber of usPhones(3, 200)) {
      const res = await firm.client.post('/api/v2/create-outbound-call', {
        toNumber,
        agentId: firm.agentId,
        firmSlug: firm.slug,
      });
      expect(res.status).toBe(200);
      ids.push(res.body.call_id);
    }
    const calls = await eventually(async () => {
      const found = await callsOf(stack)
        .find({ _id: { $in: ids } })
        .toArray();
      expect(found.every((c) => c.status === 'ended')).toBe(true);
      return found;
    }, 30_000);
    // The simulator's own records: when each call was placed and hung up.
    const dials = await simulatorDials(
      stack,
      calls.map((c) => c.to_number!),
    );
    const placed = dials.map((d: any) => [d.created_at.getTime(), d.end_timestamp] as [number, number]);
    expect(placed).toHaveLength(3);
    expect(maxOverlap(placed)).toBe(1);
  });

  it('retries a not_connected (0000) lead twice, at least CAMPAIGN_RETRY_DELAY_MS apart, then settles it as failed', async () => {
    const firm = await firmWithAgent();
    const unanswered = '+12125550000';
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: [{ phone: unanswered }, { phone: '+12125550411' }],
    });
    expect(await launch(firm.client, created.id)).toBe(2);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 2, calls_placed: 2, calls_completed: 1, calls_failed: 1 });

    const attempts = (await campaignCalls(stack, created.id))
      .filter((c) => c.to_number === unanswered)
      .sort((x, y) => x.campaign_attempt! - y.campaign_attempt!);
    expect(attempts.map((c) => [c.campaign_attempt, c.status, c.disconnection_reason])).toEqual([
      [1, 'not_connected', 'dial_no_answer'],
      [2, 'not_connected', 'dial_no_answer'],
      [3, 'not_connected', 'dial_no_answer'],
    ]);
    for (let i = 1; i < attempts.length; i++) {
      expect(attempts[i]!.created_at.getTime() - attempts[i - 1]!.end_timestamp!).toBeGreaterThanOrEqual(
        RETRY_DELAY_MS,
      );
    }
    expect(await simulatorDials(stack, [unanswered])).toHaveLength(3);
    // Nothing more comes later.
    await sleep(RETRY_DELAY_MS * 2);
    expect(await campaignCalls(stack, created.id)).toHaveLength(4);
  });

  it('a campaign whose phones were added before phone pages were kept is fanned out from its claims', async () => {
    const firm = await firmWithAgent();
    const phones = usPhones(3, 820);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    // As an older version left it: phone claims only.
    const db = stack.services.mongo.db;
    await db.collection(COLLECTIONS.campaignPhonePages).deleteMany({ campaign_id: created.id });
    await db
      .collection(COLLECTIONS.campaigns)
      .updateOne({ _id: created.id as any }, { $unset: { phone_pages: '' } });
    expect(await launch(firm.client, created.id)).toBe(3);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 3, calls_completed: 3 });
    expect((await simulatorDials(stack, phones)).length).toBe(3);
    const pages = await db
      .collection(COLLECTIONS.campaignPhonePages)
      .find({ campaign_id: created.id })
      .toArray();
    expect(pages.flatMap((p) => p.phones as string[]).sort()).toEqual([...phones].sort());
  });

  it('a launch that died after its claim and its fan-out job is finished by the fan-out job', async () => {
    const firm = await firmWithAgent();
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: usPhones(2, 800).map((phone) => ({ phone })),
    });
    await stack.services.mongo.db
      .collection(COLLECTIONS.campaignClaims)
      .insertOne({ _id: `launch:${created.id}` as any, launch_of: created.id, created_at: new Date() });
    const job = await launchFanoutJob(stack.services.mongo.db, created.id, firm.slug);
    await enqueue(stack.services.queues, JOBS.campaignFanout, job!);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 2, calls_completed: 2, launched_at: expect.any(String) });
  });

  it("a fan-out failing on the service's own side is tried again at most 5 s apart (for about an hour), and the campaign is called once it succeeds", async () => {
    const firm = await firmWithAgent();
    const phones = usPhones(2, 860);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    // The campaign's only phone page taken away: the fan-out fails reading it, as it fails while
    // MongoDB is down.
    const pages = stack.services.mongo.db.collection<{ _id: string }>(COLLECTIONS.campaignPhonePages);
    const page = await pages.findOne({ _id: `${created.id}#0` });
    expect(page).not.toBeNull();
    await pages.deleteOne({ _id: page!._id });
    expect(await launch(firm.client, created.id)).toBe(2);

    const queue = stack.services.queues[JOBS.campaignFanout.queue];
    const id = JOBS.campaignFanout.id!(
      (await launchFanoutJob(stack.services.mongo.db, created.id, firm.slug))!,
    );
    // Five failures in a row: BullMQ's exponential backoff would wait 16 s now, and give the job up
    // for good after 8 attempts (about 2 minutes), the campaign left running with nothing to call.
    const failing = await eventually(async () => {
      const job = await queue.getJob(id);
      expect(job?.attemptsMade).toBeGreaterThanOrEqual(5);
      return job!;
    }, 60_000);
    expect(failing.opts).toMatchObject({ attempts: CAPPED_ATTEMPTS, backoff: { type: CAPPED } });
    expect(await failing.getState()).not.toBe('failed');
    expect(failing.delay).toBeLessThanOrEqual(CAPPED_MAX_MS);
    expect(await getCampaign(firm.client, created.id)).toMatchObject({ status: 'running', calls_placed: 0 });

    await pages.insertOne(page!);
    // Its next attempt, which succeeds now, is due within CAPPED_MAX_MS (asserted above): run at
    // once rather than waited for (2.5 to 5 s). A job no longer delayed (its attempt came first,
    // or is under way) cannot be promoted: that attempt, or the one after it, runs by itself.
    await failing.promote().catch(() => undefined);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_queued: 2, calls_placed: 2, calls_completed: 2 });
    expect((await simulatorDials(stack, phones)).length).toBe(2);
  });

  it('pause freezes calls_placed (calls in progress finish), resume completes it', async () => {
    const firm = await firmWithAgent({ max_concurrent_calls: 1 });
    const phones = usPhones(6, 300);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: phones.map((phone) => ({ phone })),
    });
    await launch(firm.client, created.id);
    await waitForCampaign(firm.client, created.id, (c) => c.calls_placed >= 1, 30_000);
    const paused = await firm.client.post(`/api/leads/campaigns/${created.id}/pause`, {});
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe('paused');

    const frozenCalls = await settledCalls(created.id);
    // calls_placed counts the leads dialled: a call the pause holds undialled is not one.
    const frozen = await waitForCampaign(
      firm.client,
      created.id,
      (c) => c.calls_placed === dialledOf(frozenCalls),
      15_000,
    );
    // Long enough for several more calls of SIM_CALL_MS had the campaign been running.
    await sleep(SIM_CALL_MS * 8);
    expect(await getCampaign(firm.client, created.id)).toMatchObject({
      status: 'paused',
      calls_placed: frozen.calls_placed,
    });
    expect(await campaignCalls(stack, created.id)).toHaveLength(frozenCalls.length);

    expect((await firm.client.post(`/api/leads/campaigns/${created.id}/resume`)).body.status).toBe('running');
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed');
    expect(done).toMatchObject({ calls_placed: 6, calls_completed: 6, calls_failed: 0 });
    expect((await campaignCalls(stack, created.id)).map((c) => c.to_number).sort()).toEqual(
      [...phones].sort(),
    );
  });

  it('cancel stops it for good', async () => {
    const firm = await firmWithAgent({ max_concurrent_calls: 1 });
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: usPhones(6, 400).map((phone) => ({ phone })),
    });
    await launch(firm.client, created.id);
    await waitForCampaign(firm.client, created.id, (c) => c.calls_placed >= 1, 30_000);
    expect((await firm.client.post(`/api/leads/campaigns/${created.id}/cancel`)).body.status).toBe(
      'cancelled',
    );
    const calls = await settledCalls(created.id);
    await sleep(SIM_CALL_MS * 8);
    const after = await getCampaign(firm.client, created.id);
    expect(after.status).toBe('cancelled');
    // A call the cancel ended before its dial (dial_blocked) is not placed.
    expect(after.calls_placed).toBe(dialledOf(calls));
    expect(await campaignCalls(stack, created.id)).toHaveLength(calls.length);
    // Its parked jobs ended; nothing of it is waiting for a dial slot.
    const waiting = await stack.services.redis.zcard(redisKeys(stack.config).dialWaiters(firm.slug));
    expect(waiting).toBe(0);
  });
});

/** "HH:MM" of an instant in UTC. */
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe('calling windows', () => {
  it('a lead whose local time is outside the window waits (delayed to the opening) while one inside is called', async () => {
    const now = clock.now(); // the service's clock: the window test set it
    // A two-hour window around the present moment in UTC; America/Chicago-like offsets are
    // outside it, whatever the date (a fixed-offset zone six hours behind).
    const window = { start: hhmm(now - 3600_000), end: hhmm(now + 3600_000), days: [1, 2, 3, 4, 5, 6, 7] };
    const firm = await firmWithAgent({ timezone: 'UTC', calling_window: window });
    const inside = '+12125550511';
    const outside = '+12125550512';
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: [
        { phone: inside }, // the firm's zone: UTC
        { phone: outside, timezone: 'Etc/GMT+6' },
      ],
    });
    expect(await launch(firm.client, created.id)).toBe(2);
    await waitForCampaign(firm.client, created.id, (c) => c.calls_completed === 1);
    const calls = await campaignCalls(stack, created.id);
    expect(calls.map((c) => c.to_number)).toEqual([inside]);
    // The other lead's job waits, delayed until the window opens in its zone. It runs beside the
    // inside lead's job, whose call can have ended before this one has parked.
    const id = jobId('cc', created.id, outside, '1');
    await eventually(async () =>
      expect(await stack.services.queues.campaigns.getJobState(id)).toBe('delayed'),
    );
    const score = await stack.services.redis.zscore(`${stack.config.queuePrefix}:campaigns:delayed`, id);
    const dueAt = Math.floor(Number(score) / 0x1000);
    const expected = nextCallTime(window, 'Etc/GMT+6', clock.now())!;
    expect(Math.abs(dueAt - clock.wallTimeOf(expected))).toBeLessThan(2000);
    expect(expected).toBeGreaterThan(clock.now() + 3600_000);
    // The campaign says a lead waits for its hours, and until when.
    expect(await getCampaign(firm.client, created.id)).toMatchObject({
      status: 'running',
      calls_placed: 1,
      calls_waiting: 1,
      next_allowed_at: new Date(expected).toISOString(),
    });
  });

  it('a window opening in the next minute gets its calls then', async () => {
    const { firm, created, opens, phones, launched, states, dueAt, seenWaitingAt, callsWhileWaiting } =
      beforeWindow;
    expect(launched).toBe(2);
    expect(states).toEqual(['delayed', 'delayed']);
    // Seen waiting before the opening: both jobs delayed until exactly the opening (the wall-clock
    // instant at which the service's clock reads it), no call.
    expect(seenWaitingAt).toBeLessThan(opens);
    expect(dueAt).toEqual(phones.map(() => clock.wallTimeOf(opens)));
    expect(callsWhileWaiting).toBe(0);
    // Running with nothing placed: it says both leads wait for the window, until its opening.
    expect(beforeWindow.viewWhileWaiting).toMatchObject({
      status: 'running',
      calls_placed: 0,
      calls_waiting: 2,
      next_allowed_at: new Date(opens).toISOString(),
    });
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 100_000);
    expect(done).toMatchObject({ calls_completed: 2, calls_waiting: 0, next_allowed_at: null });
    const calls = await campaignCalls(stack, created.id);
    expect(calls.map((c) => c.to_number).sort()).toEqual([...phones].sort());
    for (const call of calls) {
      expect(call.created_at.getTime()).toBeGreaterThanOrEqual(clock.wallTimeOf(opens));
    }
  }, 180_000);
});

/**
 * A campaign whose firm's calling window opens in 30 s (so its calls are seen waiting first,
 * however busy the machine: a firm, an agent, a campaign and its launch take about 1 s on a quiet
 * one), launched; what was seen before the opening is returned. The window
 * is whole minutes, so the service's clock (core/platform/clock.ts, which the dial gate reads) is
 * set to stand 30 s before the next full minute: no waiting for the wall clock's minute.
 */
async function launchBeforeWindow() {
  const opens = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000;
  clock.set(opens - 30_000);
  const window = { start: hhmm(opens), end: hhmm(opens + 2 * 3600_000), days: [1, 2, 3, 4, 5, 6, 7] };
  const firm = await firmWithAgent({ timezone: 'UTC', calling_window: window });
  const phones = usPhones(2, 600);
  const created = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId: firm.agentId,
    leads: phones.map((phone) => ({ phone })),
  });
  const launched = await launch(firm.client, created.id);
  const delayedKey = `${stack.config.queuePrefix}:campaigns:delayed`;
  // Looked at until both jobs are delayed (or the opening is near); the test asserts what was seen.
  let states: (string | undefined)[] = [];
  let dueAt: number[] = [];
  do {
    if (states.length > 0) await sleep(100);
    states = [];
    dueAt = [];
    for (const phone of phones) {
      const id = jobId('cc', created.id, phone, '1');
      const job = await stack.services.queues.campaigns.getJob(id);
      states.push(await job?.getState());
      dueAt.push(Math.floor(Number(await stack.services.redis.zscore(delayedKey, id)) / 0x1000));
    }
  } while (states.some((s) => s !== 'delayed') && clock.now() < opens - 2000);
  const seenWaitingAt = clock.now();
  const callsWhileWaiting = (await campaignCalls(stack, created.id)).length;
  const viewWhileWaiting = await getCampaign(firm.client, created.id);
  const seen = { states, dueAt, seenWaitingAt, callsWhileWaiting, viewWhileWaiting };
  return { firm, created, opens, phones, launched, ...seen };
}
