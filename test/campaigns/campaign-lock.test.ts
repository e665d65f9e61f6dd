// The campaign's writer lock (core/domain/campaigns/campaign-store.ts withCampaignLock): a writer
// that works long (an add of 5,000 leads on a loaded store) keeps it, its lease renewed, and one
// that died holds it at most 30 s, so a pause asked for after a crash mid-add waits no longer
// (before: a 120 s lease, not renewed — a live writer past it lost the campaign to the next one,
// and a dead one kept pause, resume and cancel answering 409 campaign_busy for two minutes).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { withCampaignLock } from '../../core/domain/campaigns/campaign-store.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createCampaign, usPhones } from './support.js';

/** The longest a dead writer holds a campaign. */
const DEAD_WRITER_MS = 30_000;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.stop());

it('a writer working past a third of its lease keeps the campaign (renewed); a lease is at most 30 s', async () => {
  const firm = await createFirm(stack);
  const agentId = await createAgent(firm.client, firm.slug);
  const { id } = await createCampaign(firm.client, {
    firmSlug: firm.slug,
    agentId,
    leads: usPhones(1, 900).map((phone) => ({ phone })),
  });
  const key = redisKeys(stack.config).campaignLock(id);
  const leases: number[] = [];
  await withCampaignLock(stack.services, id, async () => {
    leases.push(await stack.services.redis.pttl(key));
    // Longer than a third of the lease: a renewal has come meanwhile.
    await sleep(DEAD_WRITER_MS / 3 + 2_000);
    leases.push(await stack.services.redis.pttl(key));
  });
  const [first, late] = leases as [number, number];
  expect(first).toBeGreaterThan(0);
  expect(first).toBeLessThanOrEqual(DEAD_WRITER_MS);
  // Renewed within the last third: more than two thirds of the lease left, 12 s into the work.
  expect(late).toBeGreaterThan((DEAD_WRITER_MS * 2) / 3 - 1_000);
  expect(late).toBeLessThanOrEqual(DEAD_WRITER_MS);
  // Released at the end.
  expect(await stack.services.redis.exists(key)).toBe(0);
});
