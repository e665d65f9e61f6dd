// A campaign create whose inline leads' lead.created events cannot be recorded leaves nothing
// behind (docs/campaigns.md#creating-a-campaign). Before, the campaign was removed and its inline
// leads, their memberships and phones, and the events already stored stayed: orphans a retry
// doubled. The failure is Redis's own answer, WRONGTYPE on the firm's listeners epoch (a key of the
// wrong type), so the campaign's lock and its writes succeed and only the events fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createCampaign } from './support.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

describe('a campaign create whose events fail', () => {
  it('answers an error and leaves no campaign, lead, member, phone or event behind; then a retry makes one', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    const epoch = redisKeys(stack.config).eventsListenersEpoch(firm.slug);
    await stack.services.redis.rpush(epoch, 'not a string');
    const body = {
      firmSlug: firm.slug,
      agentId,
      // Enough that their events are more than one round of writes: every one is taken back.
      leads: [
        ...Array.from({ length: 38 }, (_, i) => ({
          first_name: `Lead ${i}`,
          phone: `+1212555${String(1000 + i).padStart(4, '0')}`,
        })),
        { first_name: 'Bo', phone: '+12125550102' },
        { first_name: 'Cy', email: 'cy@example.com' },
      ],
    };
    const res = await firm.client.post('/api/leads/campaigns', { name: 'Spring follow-up', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(500);
    const db = stack.services.mongo.db;
    const count = (name: string, filter: Record<string, unknown>) =>
      db.collection(name).countDocuments(filter);
    expect(await count(COLLECTIONS.campaigns, { firm: firm.slug })).toBe(0);
    expect(await count(COLLECTIONS.leads, { firm: firm.slug })).toBe(0);
    expect(await count(COLLECTIONS.campaignLeads, { firm: firm.slug })).toBe(0);
    expect(await count(COLLECTIONS.campaignClaims, { firm: firm.slug })).toBe(0);
    expect(await count(COLLECTIONS.campaignPhonePages, {})).toBe(0);
    expect(await count(COLLECTIONS.events, { firm: firm.slug, type: 'lead.created' })).toBe(0);

    await stack.services.redis.del(epoch);
    const made = await createCampaign(firm.client, body);
    expect(made.leads_total).toBe(40);
    expect(await count(COLLECTIONS.leads, { firm: firm.slug })).toBe(40);
    expect(await count(COLLECTIONS.events, { firm: firm.slug, type: 'lead.created' })).toBe(40);
  });
});
