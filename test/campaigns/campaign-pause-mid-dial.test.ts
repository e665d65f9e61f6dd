// A pause or cancel that comes while one of the campaign's calls is being dialled: the call's job
// looked at the campaign (running) and is past the dial gate, its request at the provider. The
// answer waits for that dial, so that what it says holds: no call is dialled after it, and the
// dial under way is in the answer's calls_placed. Before, the answer came at once and the dial
// followed it. The dial is held here at the simulator's write of its call (a relay in front of
// FerretDB).
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { insertCommandOn } from '../helpers/tcp-relay.js';
import { createFirm } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { landsWithin } from '../helpers/held-lock.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { campaignCalls, createAgent, createCampaign, launch, simulatorDials, usPhones } from './support.js';

const relayed = useStackBehindMongoRelay();

describe.each(['pause', 'cancel'] as const)('a %s while a campaign call is being dialled', (action) => {
  it('answers once that dial is over, counted, and no call is dialled after the answer', async () => {
    // One call at a time: the second lead waits for the first call's slot.
    const firm = await createFirm(relayed.stack, { max_concurrent_calls: 1 });
    const agentId = await createAgent(firm.client, firm.slug);
    const phones = usPhones(2, action === 'pause' ? 810 : 820);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: phones.map((phone) => ({ phone })),
    });

    const dialling = relayed.relay.holdRequest(insertCommandOn(COLLECTIONS.simulatorCalls));
    await launch(firm.client, created.id);
    await dialling.seen;

    const answer = firm.client.post(`/api/leads/campaigns/${created.id}/${action}`, {});
    // The dial stays held for a while: the answer waits for it.
    expect(await landsWithin([answer], 1_500)).toBe('waiting');
    dialling.release();
    const res = await answer;

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: action === 'pause' ? 'paused' : 'cancelled', calls_placed: 1 });
    // The held dial went on (a call in progress finishes) and ended; the other lead's call is not
    // dialled, though the first call's slot is free again.
    await eventually(async () => {
      const calls = await campaignCalls(relayed.stack, created.id);
      const first = calls.find((c) => c.provider_call_id !== null);
      expect(first?.finished).toBe(true);
    }, 60_000);
    await sleep(1_000);
    expect(await simulatorDials(relayed.stack, phones)).toHaveLength(1);
  });
});
