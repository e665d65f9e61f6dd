// A number put on the do-not-call list while a call to it is being dialled: the call's job read
// the list (not listed) and is past the dial gate, its request at the provider. The addition's
// answer waits for that dial, so that what it says holds: no call to a listed number is dialled
// after it. Before, the answer came at once and the dial followed it. The dial is held here at
// the simulator's write of its call (a relay in front of FerretDB).
import { describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createAgent, simulatorDials, usPhones } from '../campaigns/support.js';
import { landsWithin } from '../helpers/held-lock.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { createFirm } from '../helpers/stack.js';
import { insertCommandOn } from '../helpers/tcp-relay.js';

const relayed = useStackBehindMongoRelay();

async function callHeldAtTheProvider(phone: string) {
  const firm = await createFirm(relayed.stack);
  const agentId = await createAgent(firm.client, firm.slug);
  const dialling = relayed.relay.holdRequest(insertCommandOn(COLLECTIONS.simulatorCalls));
  const created = await firm.client.post('/api/v2/create-outbound-call', {
    toNumber: phone,
    agentId,
    firmSlug: firm.slug,
  });
  expect(created.status).toBe(200);
  await dialling.seen;
  return { firm, dialling };
}

describe('a do-not-call addition while a call is being dialled', () => {
  it('to that number answers once the dial is over', async () => {
    const [phone] = usPhones(1, 830);
    const { firm, dialling } = await callHeldAtTheProvider(phone!);
    const answer = firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [phone] });
    // The dial stays held for a while: the answer waits for it.
    expect(await landsWithin([answer], 1_500)).toBe('waiting');
    dialling.release();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ added: 1 });
    // The dial under way went on (one call), and that is all.
    expect(await simulatorDials(relayed.stack, [phone!])).toHaveLength(1);
  });

  it('to another number answers while the dial is held', async () => {
    const [phone, other] = usPhones(2, 840);
    const { firm, dialling } = await callHeldAtTheProvider(phone!);
    try {
      const answer = firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [other] });
      // Only a guard against a hang: it answers while the dial is held.
      expect(await landsWithin([answer], 30_000)).toBe('landed');
      expect((await answer).body).toMatchObject({ added: 1 });
    } finally {
      dialling.release();
    }
  });
});
