// A launch whose fan-out job reached Redis but whose answer was lost (a partition right after the
// request, which a new connection does not get through either: the web drops the connection that
// answers nothing, cannot get an answer on a new one, gives up after PRODUCER_COMMAND_TIMEOUT_MS
// and answers 503, withdrawing its launch claim) leaves a fan-out job behind that runs, finds no
// launch and ends. The client's retry of the launch must still get its fan-out run, whether that
// job has ended or is still running: the campaign calls its leads and completes, instead of
// staying `running` with calls_placed 0 for good. When only the one connection lost its answers,
// the web's add, sent again on its new connection, is answered, and the launch is taken at once.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PRODUCER_COMMAND_TIMEOUT_MS } from '../../core/platform/redis.js';
import { JOBS } from '../../jobs/table.js';
import { jobId } from '../../jobs/define.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import {
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  simulatorDials,
  usPhones,
  waitForCampaign,
} from './support.js';

let relay: TcpRelay;
let stack: Stack;

beforeAll(async () => {
  const redisUrl = inject('redisUrl');
  relay = await startTcpRelay(new URL(redisUrl));
  stack = await startStack({ workers: true, env: { REDIS_URL: relay.via(redisUrl), SIM_CALL_MS: '200' } });
});
afterAll(async () => {
  await stack?.stop();
  await relay?.close();
});

type Firm = Awaited<ReturnType<typeof createFirm>>;

/** The campaign's fan-out jobs, however they stand. */
async function fanoutJobs(campaignId: string) {
  const queue = stack.services.queues[JOBS.campaignFanout.queue];
  const jobs = await queue.getJobs(['active', 'waiting', 'delayed', 'prioritized', 'completed', 'failed']);
  return jobs.filter((j) => j?.name === JOBS.campaignFanout.name && j.data.campaignId === campaignId);
}

/**
 * The launch's fan-out job add reaches Redis; its answer (and every later one on that connection,
 * or on any connection made meanwhile) is lost until the connections are cut, after the web has
 * given up on it and answered 503.
 */
async function launchAnswered503(firm: Firm, campaignId: string) {
  const cut = relay.loseRepliesAfter(
    jobId('fanout', campaignId),
    PRODUCER_COMMAND_TIMEOUT_MS + 3_000,
    'lost',
  );
  const refused = await firm.client.post(`/api/leads/campaigns/${campaignId}/launch`);
  expectError(refused, 503, 'unavailable');
  await cut;
}

/** A firm's draft campaign of two leads (phones from `first`). */
async function draftOfTwo(first: number) {
  const firm = await createFirm(stack);
  const agentId = await createAgent(firm.client, firm.slug);
  const phones = usPhones(2, first);
  const created = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId,
    leads: phones.map((phone) => ({ phone })),
  });
  return { firm, phones, created };
}

/** The campaign completes, each of its phones dialled once. */
async function calledOnceEach(firm: Firm, campaignId: string, phones: string[]) {
  const done = await waitForCampaign(firm.client, campaignId, (c) => c.status === 'completed');
  expect(done).toMatchObject({ calls_queued: 2, calls_placed: 2, calls_completed: 2, calls_failed: 0 });
  expect((await simulatorDials(stack, phones)).length).toBe(2);
}

describe('a launch whose answer from Redis is lost on one connection', () => {
  it('is taken: the web drops that connection before the command times out, and the add sent again on a new one is one job', async () => {
    const { firm, phones, created } = await draftOfTwo(930);
    // The relay would end the connection only after the command's timeout: a 200 means the web
    // ended it first, and was answered on its new connection before the command gave up.
    void relay.loseRepliesAfter(jobId('fanout', created.id), PRODUCER_COMMAND_TIMEOUT_MS + 3_000);
    expect(await launch(firm.client, created.id)).toBe(2);
    await calledOnceEach(firm, created.id, phones);
    const jobs = await fanoutJobs(created.id);
    expect(jobs.map((j) => j.returnvalue?.outcome)).toEqual(['fanned_out']);
  }, 180_000);
});

describe('a launch answered 503 after its fan-out job reached Redis', () => {
  it('is launched by the retry, whose campaign calls its leads and completes', async () => {
    const { firm, phones, created } = await draftOfTwo(940);
    await launchAnswered503(firm, created.id);

    // That job ran: the launch withdrawn, it found nothing to launch.
    await eventually(async () => {
      const [job] = await fanoutJobs(created.id);
      expect(await job?.getState()).toBe('completed');
      expect(job?.returnvalue).toMatchObject({ outcome: 'not_launched' });
    }, 60_000);
    expect(await getCampaign(firm.client, created.id)).toMatchObject({ status: 'draft', calls_queued: 0 });

    // The client's retry.
    expect(await launch(firm.client, created.id)).toBe(2);
    await calledOnceEach(firm, created.id, phones);
  }, 180_000);

  it('is launched by a retry made while that job is still running, to end "not launched"', async () => {
    const { firm, phones, created } = await draftOfTwo(950);
    // The left-behind job's end (its "not launched" outcome on its way to Redis) is held back:
    // the retry comes while it is still running.
    const ending = relay.holdRequest('not_launched');
    await launchAnswered503(firm, created.id);
    await ending.seen;
    const [orphan] = await fanoutJobs(created.id);
    expect(await orphan?.getState()).toBe('active');

    expect(await launch(firm.client, created.id)).toBe(2);
    ending.release();
    await calledOnceEach(firm, created.id, phones);
    const outcomes = await Promise.all((await fanoutJobs(created.id)).map((j) => j.returnvalue?.outcome));
    expect(outcomes.sort()).toEqual(['fanned_out', 'not_launched']);
  }, 180_000);
});
