// The per-firm pacing primitive on real Redis: at most max_concurrent_calls slots, a call keeps
// its own slot, a release or an expired lease frees one, waiters are woken first-in-line first
// (create-outbound-call before campaign leads), and a slot whose end event was lost is freed by
// its lease and the reaper, so the next call of the firm goes out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { startWebhookProxy, type WebhookProxy } from '../fakes/webhook-proxy.js';
import {
  dialSlotsInUse,
  releaseDialSlot,
  takeDialSlot,
  wakeDialWaiters,
} from '../../core/domain/pacing/dial-slots.js';
import { callsOf, createAgent } from './support.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The lease here (65 minutes by default): short, so a lost end event frees its slot within the
 * test, and long enough that a loaded machine's steps between taking a slot and looking at its
 * waiter (a call rung, answered and seen ongoing, then the next call parked) fit inside it.
 */
const LEASE_MS = 6000;
/** The reaper's interval here (30 s by default). */
const REAP_MS = 1000;

let proxy: WebhookProxy;
let stack: Stack;

const waiters = (on: Stack, firm: string) =>
  on.services.redis.zrange(redisKeys(on.config).dialWaiters(firm), '0', '-1');

// The primitive alone: no workers, so no reaper pops a waiter between two looks, and the default
// lease (minutes), so no slot runs out while a loaded machine takes its time between the steps.
describe('dial slots, the primitive', () => {
  let plain: Stack;
  beforeAll(async () => {
    plain = await startStack();
  });
  afterAll(async () => {
    await plain?.stop();
  });

  it('at most max_concurrent_calls; a holder keeps its slot; a release lets the next in', async () => {
    const firm = await createFirm(plain, { max_concurrent_calls: 2 });
    const s = plain.services;
    expect(await takeDialSlot(s, firm.slug, 'call_a', 'campaigns\tjob-a')).toBe(true);
    expect(await takeDialSlot(s, firm.slug, 'call_b', 'campaigns\tjob-b')).toBe(true);
    expect(await takeDialSlot(s, firm.slug, 'call_a', 'campaigns\tjob-a')).toBe(true); // its own, again
    expect(await takeDialSlot(s, firm.slug, 'call_c', 'campaigns\tjob-c')).toBe(false);
    expect(await takeDialSlot(s, firm.slug, 'call_d', 'calls\tjob-d', 'first')).toBe(false);
    expect((await dialSlotsInUse(s, firm.slug)).sort()).toEqual(['call_a', 'call_b']);
    // In line: the create-outbound-call waiter first, then the campaign lead.
    expect(await waiters(plain, firm.slug)).toEqual(['calls\tjob-d', 'campaigns\tjob-c']);
    // Other firms are not concerned.
    const other = await createFirm(plain, { max_concurrent_calls: 1 });
    expect(await takeDialSlot(s, other.slug, 'call_x', 'campaigns\tjob-x')).toBe(true);

    await releaseDialSlot(s, firm.slug, 'call_a');
    // One slot free: the first waiter was woken (popped), the other still waits.
    expect(await waiters(plain, firm.slug)).toEqual(['campaigns\tjob-c']);
    expect(await takeDialSlot(s, firm.slug, 'call_d', 'calls\tjob-d', 'first')).toBe(true);
    expect(await takeDialSlot(s, firm.slug, 'call_c', 'campaigns\tjob-c')).toBe(false);
    // A repeated release changes nothing.
    await releaseDialSlot(s, firm.slug, 'call_a');
    expect((await dialSlotsInUse(s, firm.slug)).sort()).toEqual(['call_b', 'call_d']);
  });
});

// The lease and the reaper, with short figures, and the workers that dial.
describe('dial slots', () => {
  beforeAll(async () => {
    proxy = await startWebhookProxy();
    stack = await startStack({
      workers: true,
      env: {
        PUBLIC_BASE_URL: proxy.url,
        SIM_CALL_MS: '200',
        DIAL_SLOT_LEASE_MS: String(LEASE_MS),
        DIAL_SLOT_REAP_MS: String(REAP_MS),
      },
    });
    proxy.target = stack.baseUrl;
  });
  afterAll(async () => {
    await stack?.stop();
    await proxy?.close();
  });

  it('a lease that runs out frees its slot', async () => {
    const firm = await createFirm(stack, { max_concurrent_calls: 1 });
    const s = stack.services;
    expect(await takeDialSlot(s, firm.slug, 'call_lost', 'campaigns\tjob-1')).toBe(true);
    expect(await takeDialSlot(s, firm.slug, 'call_next', 'campaigns\tjob-2')).toBe(false);
    await sleep(LEASE_MS + 100);
    expect(await wakeDialWaiters(s, firm.slug)).toBe(0); // job-2 is not a real job: popped, nothing to promote
    expect(await takeDialSlot(s, firm.slug, 'call_next', 'campaigns\tjob-2')).toBe(true);
    expect(await dialSlotsInUse(s, firm.slug)).toEqual(['call_next']);
  });

  it('a call whose end event never comes holds its slot only until the lease: the next call goes out', async () => {
    const firm = await createFirm(stack, { max_concurrent_calls: 1 });
    const agentId = await createAgent(firm.client, firm.slug);
    proxy.holdEvent('call_ended'); // the first call's end is never delivered (until the test ends)
    const call = (toNumber: string) =>
      firm.client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug: firm.slug });
    const first = (await call('+12125550911')).body.call_id;
    await eventually(async () => {
      expect((await callsOf(stack).findOne({ _id: first }))?.status).toBe('ongoing');
    });
    const second = (await call('+12125550912')).body.call_id;
    // It waits, parked (a delayed job), while the first holds the slot; then the reaper (every
    // REAP_MS here) frees the expired lease and wakes it.
    await eventually(async () => {
      expect(await (await stack.services.queues.calls.getJob(second))?.getState()).toBe('delayed');
    });
    expect((await callsOf(stack).findOne({ _id: second }))?.provider_call_id).toBeNull();
    await eventually(
      async () => expect((await callsOf(stack).findOne({ _id: second }))?.provider_call_id).toBeTruthy(),
      45_000,
      200,
    );
    const [a, b] = await Promise.all([first, second].map((id) => callsOf(stack).findOne({ _id: id })));
    expect(b!.created_at.getTime()).toBeGreaterThanOrEqual(a!.created_at.getTime());
    proxy.release('call_ended');
  });
});
