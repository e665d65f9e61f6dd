// A firm's clients synced from Clio (docs/contacts.md#known-clients) in its campaigns, on real
// workers against the local Clio: inline campaign leads are marked known_client as POST
// /api/leads marks them; a campaign calls them unless it was created with skip_known_clients,
// in which case they are not called, calls_queued leaves them out and the campaign says how
// many it skipped. Bad values of the setting are a 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { connectClio, finished, startSync } from '../contacts/clio-support.js';
import { startFakeClio, type ClioContactRecord, type FakeClio } from '../fakes/clio-server.js';
import { registerClioRedirect } from '../integrations/clio-oauth-browser.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import {
  campaignCalls,
  createAgent,
  createCampaign,
  getCampaign,
  launch,
  waitForCampaign,
} from './support.js';

let clio: FakeClio;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
/** A lead created before the sync: its phone is a client's, but it was not known then. */
let earlyLeadId: string;

// Clients in Clio: two by phone, one by email only.
const CLIENT_PHONES = ['+14155550301', '+14155550302'];
const CLIENT_EMAIL = 'client3@example.com';
const EARLY_CLIENT_PHONE = '+14155550304';
const STRANGERS = ['+12125550311', '+12125550312', '+12125550313'];

function clioPerson(id: number, phone: string | null, email: string | null): ClioContactRecord {
  return {
    id,
    type: 'Person',
    first_name: `Client${id}`,
    last_name: 'Known',
    name: `Client${id} Known`,
    email_addresses: email === null ? [] : [{ name: 'Home', address: email, primary: true }],
    phone_numbers: phone === null ? [] : [{ name: 'Personal', number: phone, primary: true }],
    updated_at: new Date(Date.now() - 86_400_000).toISOString(),
  };
}

beforeAll(async () => {
  clio = await startFakeClio();
  stack = await startStack({
    workers: true,
    env: {
      CLIO_CLIENT_ID: clio.oauth.clientId,
      CLIO_CLIENT_SECRET: clio.oauth.clientSecret,
      CLIO_BASE_URL: clio.url,
      SIM_CALL_MS: '200',
    },
  });
  registerClioRedirect(clio, stack);
  firm = await createFirm(stack, { max_concurrent_calls: 5 });
  agentId = await createAgent(firm.client, firm.slug);
  const early = await firm.client.post('/api/leads', { firmSlug: firm.slug, phone: EARLY_CLIENT_PHONE });
  expect(early.body.known_client).toBeNull();
  earlyLeadId = early.body.id;

  clio.reset();
  clio.contacts.push(
    clioPerson(701, CLIENT_PHONES[0]!, 'client1@example.com'),
    clioPerson(702, CLIENT_PHONES[1]!, null),
    clioPerson(703, null, CLIENT_EMAIL),
    clioPerson(704, EARLY_CLIENT_PHONE, null),
  );
  await connectClio(stack, firm);
  const sync = await finished(firm.client, await startSync(firm.client, firm.slug));
  expect(sync).toMatchObject({ status: 'completed', imported: 4, errors: 0 });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await clio?.close();
});

/** The campaign's inline leads: clients 1 and 2 by phone, client 3 by email (on a stranger's phone), two strangers. */
const inlineLeads = () => [
  { first_name: 'C1', phone: CLIENT_PHONES[0] },
  { first_name: 'C2', phone: '(415) 555-0302' },
  { first_name: 'C3', phone: STRANGERS[2], email: CLIENT_EMAIL.toUpperCase() },
  { first_name: 'S1', phone: STRANGERS[0] },
  { first_name: 'S2', phone: STRANGERS[1] },
];

async function calledNumbers(campaignId: string, count: number): Promise<Array<string | null>> {
  await waitForCampaign(firm.client, campaignId, (c) => c.status === 'completed');
  const calls = await eventually(async () => {
    const all = await campaignCalls(stack, campaignId);
    expect(all).toHaveLength(count);
    return all;
  });
  return calls.map((c) => c.to_number).sort();
}

describe('known clients in campaigns', () => {
  it('marks inline campaign leads that are synced clients, and calls them all when the campaign does not skip them', async () => {
    const created = await createCampaign(firm.client, { firmSlug: firm.slug, agentId, leads: inlineLeads() });
    const leads = await stack.services.mongo.db
      .collection<{ _id: string; first_name: string }>(COLLECTIONS.leads)
      .find({ campaign_id: created.id })
      .toArray();
    const byName = new Map<string, any>();
    for (const lead of leads) {
      const res = await firm.client.get(`/api/leads/${lead._id}`);
      expect(res.status).toBe(200);
      byName.set(lead.first_name, res.body);
    }
    expect(byName.get('C1').known_client).toEqual({
      source: 'clio',
      contact_id: expect.stringMatching(/./),
      external_id: '701',
    });
    expect(byName.get('C2').known_client).toMatchObject({ source: 'clio', external_id: '702' });
    expect(byName.get('C3').known_client).toMatchObject({ source: 'clio', external_id: '703' });
    expect(byName.get('S1').known_client).toBeNull();
    expect(byName.get('S2').known_client).toBeNull();

    expect(await getCampaign(firm.client, created.id)).toMatchObject({
      skip_known_clients: false,
      known_clients_skipped: 0,
    });
    expect(await launch(firm.client, created.id)).toBe(5);
    expect(await calledNumbers(created.id, 5)).toEqual([...CLIENT_PHONES, ...STRANGERS].sort());
  }, 120_000);

  it('with skip_known_clients, does not call clients (inline, added later, or by id after a sync) and leaves them out of calls_queued', async () => {
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      skip_known_clients: true,
      leads: inlineLeads(),
      // Created before the sync, so stored unmarked: its phone is looked up again as it joins.
      leadIds: [earlyLeadId],
    });
    expect(created.leads_total).toBe(6);
    // More leads while draft: one client, one stranger.
    const more = await firm.client.post(`/api/leads/campaigns/${created.id}/leads`, {
      leads: [{ first_name: 'C1 again', phone: CLIENT_PHONES[0] }, { phone: '+12125550314' }],
    });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect(more.body).toMatchObject({ leads_total: 8, leads_added: 2 });

    const draft = await getCampaign(firm.client, created.id);
    expect(draft).toMatchObject({ skip_known_clients: true, known_clients_skipped: 5, leads_total: 8 });
    expect(await launch(firm.client, created.id)).toBe(3);
    expect(await calledNumbers(created.id, 3)).toEqual(['+12125550311', '+12125550312', '+12125550314']);
    const done = await getCampaign(firm.client, created.id);
    expect(done).toMatchObject({ calls_queued: 3, calls_placed: 3, known_clients_skipped: 5 });
  }, 120_000);

  it('takes skip_known_clients as a boolean only, and only at creation', async () => {
    const base = { firmSlug: firm.slug, name: 'Bad setting', agentId, leads: [{ phone: STRANGERS[0] }] };
    for (const bad of ['yes', 1, null, {}, ['true']]) {
      const res = await firm.client.post('/api/leads/campaigns', { ...base, skip_known_clients: bad });
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res)).toEqual(['/skip_known_clients']);
    }
    const off = await createCampaign(firm.client, { ...base, skip_known_clients: false });
    expect(await getCampaign(firm.client, off.id)).toMatchObject({ skip_known_clients: false });
    // Adding leads does not change it.
    const add = await firm.client.post(`/api/leads/campaigns/${off.id}/leads`, {
      skip_known_clients: true,
      leads: [{ phone: CLIENT_PHONES[0] }],
    });
    expectError(add, 400, 'invalid_request');
    expect(detailPaths(add)).toEqual(['/skip_known_clients']);
    const on = await createCampaign(firm.client, { ...base, skip_known_clients: true });
    expect(await getCampaign(firm.client, on.id)).toMatchObject({ skip_known_clients: true });
  });
});
