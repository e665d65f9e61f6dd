// Exactly N calls however the workers die: the worker process (workers/main.ts, as the Procfile
// runs it) is killed with SIGKILL while it fans the campaign out, restarted, killed again while
// calls are being dialled, and restarted: in the end every callable phone has exactly one call
// record and exactly one call at the provider (the simulator's own records), none twice.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  launch,
  simulatorDials,
  usPhones,
  waitForCampaign,
} from './support.js';

// Enough that, with one lead per fan-out chunk, the fan-out is still going when the first kill
// comes, and calls are still to be dialled at the second (both asserted below).
const LEADS = 30;

let stack: Stack;
let child: ChildProcess | undefined;
let env: Record<string, string>;

beforeAll(async () => {
  // No workers in this process: only the child worker processes work.
  stack = await startStack({
    env: {
      SIM_CALL_MS: '200',
      // A killed worker's jobs are taken over after their lock lapses: keep that short here.
      JOB_LOCK_MS: '2000',
      // And a killed worker's lock on a call record frees itself soon too, and its dial's lease.
      CALL_LOCK_MS: '3000',
      EFFECT_LEASE_MS: '3000',
      EFFECT_LEASE_CLOCK_MARGIN_MS: '500',
      // One lead a chunk, so that the fan-out is still going when the worker is killed.
      CAMPAIGN_FANOUT_CHUNK: '1',
    },
  });
  env = stack.env;
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await stack?.stop();
});

async function kill(process: ChildProcess): Promise<void> {
  const exited = exitOf(process);
  process.kill('SIGKILL');
  expect((await exited).signal).toBe('SIGKILL');
}

describe('a campaign whose worker process is killed twice', () => {
  it('ends with exactly N call records and N provider dials', async () => {
    const firm = await createFirm(stack, { max_concurrent_calls: 1000 });
    const agentId = await createAgent(firm.client, firm.slug);
    const phones = usPhones(LEADS, 700);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: [...phones.map((phone) => ({ phone })), { phone: phones[0] }, { phone: '+442071234567' }],
    });
    expect(await launch(firm.client, created.id)).toBe(LEADS);
    const fanout = () =>
      stack.services.mongo.db.collection(COLLECTIONS.campaignFanouts).findOne({ _id: created.id as any });

    // 1. Killed while fanning out.
    child = startWorkerProcess(env);
    await eventually(async () => expect((await fanout())?.added ?? 0).toBeGreaterThan(0), 60_000, 2);
    await kill(child);
    const interrupted = await fanout();
    expect(interrupted?.done).toBe(false);
    expect(interrupted?.added).toBeLessThan(LEADS);

    // 2. Restarted: the fan-out resumes after its checkpoint; killed again while dialling.
    child = startWorkerProcess(env);
    await eventually(
      async () => expect((await simulatorDials(stack, phones)).length).toBeGreaterThanOrEqual(LEADS / 4),
      90_000,
      20,
    );
    const dialsAtSecondKill = (await simulatorDials(stack, phones)).length;
    await kill(child);
    expect(dialsAtSecondKill).toBeLessThan(LEADS);

    // 3. Restarted again: it finishes.
    child = startWorkerProcess(env);
    const done = await waitForCampaign(firm.client, created.id, (c) => c.status === 'completed', 150_000);
    expect(done).toMatchObject({
      calls_queued: LEADS,
      calls_placed: LEADS,
      calls_completed: LEADS,
      calls_failed: 0,
    });
    expect((await fanout())?.done).toBe(true);

    const calls = await campaignCalls(stack, created.id);
    expect(calls).toHaveLength(LEADS);
    expect(new Set(calls.map((c) => c.to_number)).size).toBe(LEADS);
    expect(calls.every((c) => c.status === 'ended' && c.campaign_attempt === 1)).toBe(true);
    const dials = await simulatorDials(stack, phones);
    expect(dials).toHaveLength(LEADS);
    expect(new Set(dials.map((d) => d.to_number)).size).toBe(LEADS);
    expect(new Set(dials.map((d) => d.metadata.call_id))).toEqual(new Set(calls.map((c) => c._id)));
    await kill(child);
  }, 300_000);
});
