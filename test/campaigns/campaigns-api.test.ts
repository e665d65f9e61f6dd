// Campaigns over the API without workers: creating (inline leads, the firm's leads by id), the
// callable count kept as leads come in, adding while draft, the one launch, pause / resume /
// cancel rules, lists, bad bodies and firm isolation. Workers and calls: campaign-run.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createAgent, createCampaign, getCampaign, launch, usPhones } from './support.js';

let stack: Stack;
let a: Awaited<ReturnType<typeof createFirm>>;
let b: Awaited<ReturnType<typeof createFirm>>;
let agentA: string;
let agentB: string;

beforeAll(async () => {
  stack = await startStack();
  a = await createFirm(stack);
  b = await createFirm(stack);
  agentA = await createAgent(a.client, a.slug);
  agentB = await createAgent(b.client, b.slug);
});
afterAll(async () => stack?.stop());

const db = () => stack.services.mongo.db;
const count = (name: string, filter: Record<string, unknown>) => db().collection(name).countDocuments(filter);

describe('creating a campaign', () => {
  it('counts only callable leads: one per distinct possible phone in an allowed country, not do-not-call', async () => {
    const apiLead = await a.client.post('/api/leads', {
      firmSlug: a.slug,
      phone: '(212) 555-0199',
      first_name: 'Ann',
    });
    const dncLead = await a.client.post('/api/leads', {
      firmSlug: a.slug,
      phone: '+12125550198',
      do_not_call: true,
    });
    const noPhoneLead = await a.client.post('/api/leads', { firmSlug: a.slug, email: 'x@example.com' });
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [
        { first_name: 'One', phone: '+12125550101' }, // callable
        { first_name: 'Two', phone: '212-555-0102', timezone: 'America/Chicago' }, // callable (national, US)
        { first_name: 'Same phone', phone: '+1 (212) 555-0101' }, // a phone twice
        { first_name: 'Invalid', phone: '12' }, // invalid phone: joins, not called
        { first_name: 'No phone', email: 'np@example.com' }, // no phone
        { first_name: 'DNC', phone: '+12125550103', do_not_call: true }, // do-not-call
        { first_name: 'UK', phone: '+442071234567' }, // a country not allowed (default US, CA)
        { first_name: 'Canada', phone: '+14165550123' }, // callable (CA)
        { first_name: 'Again the API lead', phone: '+12125550199' }, // same phone as a lead by id
        // Possible numbers libphonenumber names no country for, as create-outbound-call takes them:
        { first_name: 'No area code', phone: '+1 (555) 555-0123' }, // callable (+1 → US)
        { first_name: 'Drama range', phone: '+447700900123' }, // GB: a country not allowed
      ],
      leadIds: [apiLead.body.id, dncLead.body.id, noPhoneLead.body.id, apiLead.body.id],
    });
    expect(created).toEqual({
      id: expect.stringMatching(/^cmp_/),
      name: 'Spring follow-up',
      status: 'draft',
      leads_total: 14,
    });
    const campaign = await getCampaign(a.client, created.id);
    expect(campaign).toEqual({
      id: created.id,
      name: 'Spring follow-up',
      firm: a.slug,
      agent_id: agentA,
      status: 'draft',
      leads_total: 14,
      calls_queued: 0,
      calls_placed: 0,
      calls_completed: 0,
      calls_failed: 0,
      retry_on: ['not_connected', 'voicemail', 'ivr'],
      skip_known_clients: false,
      // No purpose given: the test stack's default (CAMPAIGN_DEFAULT_PURPOSE=informational).
      purpose: 'informational',
      skipped_by_reason: {
        no_consent: 0,
        consent_expired: 0,
        consent_not_for_marketing: 0,
        dnc: 0,
        country: 0,
        hours: 0,
      },
      // A draft: nothing held by the dial gate.
      calls_waiting: 0,
      next_allowed_at: null,
      known_clients_skipped: 0,
      paused_reason: null,
      launched_at: null,
      created_at: expect.stringMatching(/^\d{4}-/),
    });
    // Inline leads are leads of the firm with source "campaign".
    const inline = await db().collection(COLLECTIONS.leads).find({ campaign_id: created.id }).toArray();
    expect(inline).toHaveLength(11);
    expect(inline.every((l) => l.source === 'campaign' && l.firm === a.slug)).toBe(true);
    expect(inline.find((l) => l.first_name === 'Invalid')?.phone).toBeNull();
    expect(inline.find((l) => l.first_name === 'Two')?.phone).toBe('+12125550102');
    expect(inline.find((l) => l.first_name === 'No area code')?.phone).toBe('+15555550123');
    expect(inline.find((l) => l.first_name === 'Drama range')?.phone).toBe('+447700900123');

    const beforeLaunch = Date.now();
    const launched = await a.client.post(`/api/leads/campaigns/${created.id}/launch`);
    const afterLaunch = Date.now();
    expect(launched.status).toBe(200);
    // +12125550101, +12125550102, +14165550123, +12125550199, +15555550123
    expect(launched.body).toEqual({ launched: true, calls_queued: 5 });
    const after = await getCampaign(a.client, created.id);
    expect(after).toMatchObject({ status: 'running', calls_queued: 5, leads_total: 14 });
    // Stamped by the launch, however long it took.
    expect(Date.parse(after.launched_at)).toBeGreaterThanOrEqual(beforeLaunch);
    expect(Date.parse(after.launched_at)).toBeLessThanOrEqual(afterLaunch);
  });

  it('counts the firm’s allowed countries: GB allowed, CA not', async () => {
    const firm = await createFirm(stack, { allowed_call_countries: ['GB', 'US'] });
    const agent = await createAgent(firm.client, firm.slug);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: agent,
      leads: [{ phone: '+442071234567' }, { phone: '+14165550123' }, { phone: '+12125550101' }],
    });
    expect(await launch(firm.client, created.id)).toBe(2);
  });

  it('accepts a campaign without leads; leads are added while draft, each lead once', async () => {
    const created = await createCampaign(a.client, { firmSlug: a.slug, agentId: agentA });
    expect(created.leads_total).toBe(0);
    const lead = await a.client.post('/api/leads', { firmSlug: a.slug, phone: '+12125550150' });
    const add = (body: unknown) => a.client.post(`/api/leads/campaigns/${created.id}/leads`, body);
    const first = await add({
      leads: [{ phone: '+12125550151' }, { phone: '+12125550150' }],
      leadIds: [lead.body.id],
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: created.id,
      name: 'Spring follow-up',
      status: 'draft',
      leads_total: 3,
      leads_added: 3,
    });
    // The lead by id again: already a member, not added twice; its phone is claimed already.
    const again = await add({ leadIds: [lead.body.id], leads: [{ phone: '+12125550151' }] });
    expect(again.body).toMatchObject({ leads_total: 4, leads_added: 1 });
    expect((await add({})).body).toMatchObject({ leads_total: 4, leads_added: 0 });
    expect(await launch(a.client, created.id)).toBe(2);
    // After launch: 409, and nothing written.
    const before = await count(COLLECTIONS.leads, { firm: a.slug });
    expectError(await add({ leads: [{ phone: '+12125550152' }] }), 409, 'campaign_not_draft');
    expect(await count(COLLECTIONS.leads, { firm: a.slug })).toBe(before);
    expect((await getCampaign(a.client, created.id)).leads_total).toBe(4);
  });

  it('5,000 inline leads in one request; 5,001 is a 400', async () => {
    const leads = usPhones(5000, 0, '+1646').map((phone) => ({ phone }));
    const created = await createCampaign(a.client, { firmSlug: a.slug, agentId: agentA, leads });
    expect(created.leads_total).toBe(5000);
    const tooMany = await a.client.post(`/api/leads/campaigns/${created.id}/leads`, {
      leads: [...leads, { phone: '+16465559999' }],
    });
    expect(detailPaths(tooMany)).toEqual(['/leads']);
    expect(await launch(a.client, created.id)).toBe(5000);
  });

  it('refuses bad bodies with details and writes nothing', async () => {
    const leadsBefore = await count(COLLECTIONS.leads, {});
    const campaignsBefore = await count(COLLECTIONS.campaigns, {});
    const membersBefore = await count(COLLECTIONS.campaignLeads, {});
    const post = (body: unknown) => a.client.post('/api/leads/campaigns', body);
    const base = { firmSlug: a.slug, name: 'x', agentId: agentA };

    expect(detailPaths(await post({ firmSlug: a.slug, agentId: agentA })).sort()).toEqual(['/name']);
    expect(detailPaths(await post({ ...base, name: '' }))).toEqual(['/name']);
    expect(detailPaths(await post({ ...base, lead: [] }))).toEqual(['/lead']);
    expect(detailPaths(await post({ ...base, leads: {} }))).toEqual(['/leads']);
    expect(detailPaths(await post({ ...base, leads: ['+12125550101'] }))).toEqual(['/leads/0']);
    expect(detailPaths(await post({ ...base, leads: [{ phone_number: '+12125550101' }] }))).toEqual([
      '/leads/0/phone_number',
    ]);
    expect(detailPaths(await post({ ...base, leads: [{ phone: 12125550101 }] }))).toEqual(['/leads/0/phone']);
    expect(detailPaths(await post({ ...base, leads: [{ do_not_call: 'yes' }] }))).toEqual([
      '/leads/0/do_not_call',
    ]);
    expect(detailPaths(await post({ ...base, firmSlug: { $ne: null } }))).toEqual(['/firmSlug']);
    expect(detailPaths(await post({ ...base, leadIds: 'lead_1' }))).toEqual(['/leadIds']);

    // Checked after the schema: bad email or time zone (the phone alone may be invalid).
    const fields = await post({
      ...base,
      leads: [
        { phone: '+12125550101' },
        { email: 'not-an-email', phone: 'nope' },
        { timezone: 'Mars/Olympus' },
      ],
    });
    expectError(fields, 400, 'invalid_request');
    expect(detailPaths(fields)).toEqual(['/leads/1/email', '/leads/2/timezone']);
    // A lead may name the campaign's firm (as POST /api/leads bodies do), not another.
    const firms = await post({
      ...base,
      leads: [{ firmSlug: a.slug, phone: '+12125550101' }, { firmSlug: b.slug }],
    });
    expect(detailPaths(firms)).toEqual(['/leads/1/firmSlug']);

    // Unknown ids, and another firm's lead: 400 naming each, nothing created.
    const other = await b.client.post('/api/leads', { firmSlug: b.slug, phone: '+12125550160' });
    const mine = await a.client.post('/api/leads', { firmSlug: a.slug, phone: '+12125550161' });
    const ids = await post({ ...base, leadIds: [mine.body.id, 'lead_missing', other.body.id] });
    expectError(ids, 400, 'invalid_request');
    expect(detailPaths(ids)).toEqual(['/leadIds/1', '/leadIds/2']);

    expect(await count(COLLECTIONS.leads, {})).toBe(leadsBefore + 2);
    expect(await count(COLLECTIONS.campaigns, {})).toBe(campaignsBefore);
    expect(await count(COLLECTIONS.campaignLeads, {})).toBe(membersBefore);
  });

  it('an agent of another firm, or none: 404 agent_not_found; another firm: 403; no firm: 404', async () => {
    expectError(
      await a.client.post('/api/leads/campaigns', { firmSlug: a.slug, name: 'x', agentId: agentB }),
      404,
      'agent_not_found',
    );
    expectError(
      await a.client.post('/api/leads/campaigns', { firmSlug: a.slug, name: 'x', agentId: 'agent_none' }),
      404,
      'agent_not_found',
    );
    expectError(
      await a.client.post('/api/leads/campaigns', { firmSlug: b.slug, name: 'x', agentId: agentB }),
      403,
      'forbidden',
    );
    expectError(
      await stack.admin.post('/api/leads/campaigns', {
        firmSlug: 'no-such-firm',
        name: 'x',
        agentId: agentB,
      }),
      404,
      'firm_not_found',
    );
  });
});

describe('launching', () => {
  it('two concurrent launches: one 200, one 409 campaign_already_launched; one fan-out job', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: usPhones(20, 300).map((phone) => ({ phone })),
    });
    const results = await Promise.all(
      Array.from({ length: 4 }, () => a.client.post(`/api/leads/campaigns/${created.id}/launch`, {})),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.body).toEqual({ launched: true, calls_queued: 20 });
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 409, 'campaign_already_launched');
    const jobs = await stack.services.queues.campaigns.getJobs([
      'waiting',
      'active',
      'delayed',
      'prioritized',
    ]);
    expect(jobs.filter((j) => j.name === 'campaign-fanout' && j.data.campaignId === created.id)).toHaveLength(
      1,
    );
    expect(await count(COLLECTIONS.campaignClaims, { _id: `launch:${created.id}` })).toBe(1);
    // And later, too.
    expectError(
      await a.client.post(`/api/leads/campaigns/${created.id}/launch`),
      409,
      'campaign_already_launched',
    );
  });

  it('takes no body, {} or nothing; anything else is a 400; unknown campaign 404', async () => {
    const created = await createCampaign(a.client, { firmSlug: a.slug, agentId: agentA });
    const res = await a.client.post(`/api/leads/campaigns/${created.id}/launch`, { force: true });
    expect(detailPaths(res)).toEqual(['/force']);
    expect((await getCampaign(a.client, created.id)).status).toBe('draft');
    expect(await launch(a.client, created.id)).toBe(0);
    expectError(await a.client.post('/api/leads/campaigns/cmp_nope/launch'), 404, 'campaign_not_found');
  });

  it('a draft with nothing in it launches with calls_queued 0', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ first_name: 'no phone' }, { phone: '+12125550170', do_not_call: true }],
    });
    expect(await launch(a.client, created.id)).toBe(0);
  });
});

describe('crashes during an add or a launch', () => {
  it('an add that died half-way is undone by the campaign’s next writer: counts stay exact', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ phone: '+12125550701' }, { phone: '+12125550702' }],
    });
    // What a process that died in the middle of an add leaves behind: its mark, a lead, a
    // member and a phone claim of its batch, none of them counted.
    const batch = 'batch_died';
    await db()
      .collection(COLLECTIONS.leads)
      .insertOne({
        _id: 'lead_of_dead_add' as any,
        firm: a.slug,
        source: 'campaign',
        campaign_id: created.id,
        phone: '+12125550703',
        campaign_batch: batch,
        created_at: new Date(),
      });
    await db()
      .collection(COLLECTIONS.campaignLeads)
      .insertOne({ _id: `${created.id}:lead_of_dead_add` as any, campaign_id: created.id, batch });
    await db()
      .collection(COLLECTIONS.campaignClaims)
      .insertOne({
        _id: `${created.id}|+12125550703` as any,
        campaign_id: created.id,
        phone: '+12125550703',
        batch,
      });
    // …and its page of phones for the fan-out (the next page number, not counted either).
    await db()
      .collection(COLLECTIONS.campaignPhonePages)
      .insertOne({
        _id: `${created.id}#1` as any,
        campaign_id: created.id,
        batch,
        first: 2,
        phones: ['+12125550703'],
      });
    await db()
      .collection(COLLECTIONS.campaigns)
      .updateOne({ _id: created.id as any }, { $set: { open_batch: batch } });

    // The retried add (the client never got an answer) goes through, once.
    const retried = await a.client.post(`/api/leads/campaigns/${created.id}/leads`, {
      leads: [{ phone: '+12125550703' }],
    });
    expect(retried.body).toMatchObject({ leads_total: 3, leads_added: 1 });
    expect(await count(COLLECTIONS.leads, { _id: 'lead_of_dead_add' })).toBe(0);
    expect(await count(COLLECTIONS.campaignLeads, { campaign_id: created.id })).toBe(3);
    expect(await launch(a.client, created.id)).toBe(3);
    expect(await count(COLLECTIONS.campaignClaims, { campaign_id: created.id })).toBe(3);
    // The fan-out's pages hold each phone once, at its place.
    const pages = await db()
      .collection(COLLECTIONS.campaignPhonePages)
      .find({ campaign_id: created.id })
      .toArray();
    expect(pages.map((p) => [p._id, p.first, p.phones, p.batch === batch])).toEqual([
      [`${created.id}#0`, 0, ['+12125550701', '+12125550702'], false],
      [`${created.id}#1`, 2, ['+12125550703'], false],
    ]);
  });

  it('a launch that died after its claim is finished by the next launch request', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ phone: '+12125550711' }],
    });
    await db()
      .collection(COLLECTIONS.campaignClaims)
      .insertOne({ _id: `launch:${created.id}` as any, launch_of: created.id, created_at: new Date() });
    expect(await launch(a.client, created.id)).toBe(1);
    expect((await getCampaign(a.client, created.id)).status).toBe('running');
    expectError(
      await a.client.post(`/api/leads/campaigns/${created.id}/launch`),
      409,
      'campaign_already_launched',
    );
  });
});

describe('pause, resume, cancel', () => {
  it('follow the state rules, with their 409s', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ phone: '+12125550180' }],
    });
    const act = (action: string) => a.client.post(`/api/leads/campaigns/${created.id}/${action}`);
    expectError(await act('pause'), 409, 'campaign_not_launched');
    expectError(await act('resume'), 409, 'campaign_not_launched');
    await launch(a.client, created.id);
    const paused = await act('pause');
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id: created.id, status: 'paused', calls_queued: 1 });
    // A pause asked for is `manual` (the kill switch's own say what they counted).
    expect(paused.body.paused_reason).toEqual({
      code: 'manual',
      message: expect.stringContaining('request'),
      observed: null,
      threshold: null,
      at: expect.stringMatching(/^\d{4}-/),
    });
    expect((await act('pause')).body.paused_reason).toEqual(paused.body.paused_reason); // again: no change
    const resumed = await act('resume');
    expect(resumed.body).toMatchObject({ status: 'running', paused_reason: null });
    expect((await act('resume')).body.status).toBe('running');
    expect((await act('cancel')).body.status).toBe('cancelled');
    expect((await act('cancel')).body.status).toBe('cancelled');
    expectError(await act('pause'), 409, 'campaign_finished');
    expectError(await act('resume'), 409, 'campaign_finished');
    expectError(await act('launch'), 409, 'campaign_already_launched');
  });

  it('a cancelled draft can never be launched', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ phone: '+12125550181' }],
    });
    expect((await a.client.post(`/api/leads/campaigns/${created.id}/cancel`)).body.status).toBe('cancelled');
    expectError(
      await a.client.post(`/api/leads/campaigns/${created.id}/launch`),
      409,
      'campaign_already_launched',
    );
    expectError(
      await a.client.post(`/api/leads/campaigns/${created.id}/leads`, { leads: [{ phone: '+12125550182' }] }),
      409,
      'campaign_not_draft',
    );
  });
});

describe('lists and firm isolation', () => {
  it('lists a firm’s campaigns newest first by keyset', async () => {
    const firm = await createFirm(stack);
    const agent = await createAgent(firm.client, firm.slug);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await createCampaign(firm.client, { firmSlug: firm.slug, agentId: agent, name: `c${i}` })).id,
      );
    const seen: string[] = [];
    let cursor = '';
    do {
      const res = await firm.client.get(
        `/api/leads/campaigns?firmSlug=${firm.slug}&limit=2&cursor=${encodeURIComponent(cursor)}`,
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.campaigns.map((c: any) => c.id));
      expect(res.body.campaigns.every((c: any) => c.firm === firm.slug && c.calls_placed === 0)).toBe(true);
      cursor = res.body.next_cursor;
    } while (cursor !== '');
    expect(seen).toEqual([...ids].reverse());
    expectError(
      await firm.client.get(`/api/leads/campaigns?firmSlug=${firm.slug}&cursor=forged`),
      400,
      'invalid_cursor',
    );
    expectError(await firm.client.get(`/api/leads/campaigns?firmSlug=${a.slug}`), 403, 'forbidden');
    // One rule for lists: a firm token may leave firmSlug out (its own firm); the platform key must give it.
    const own = await firm.client.get('/api/leads/campaigns?limit=100');
    expect(own.status).toBe(200);
    expect(own.body.campaigns.map((c: any) => c.id)).toEqual([...ids].reverse());
    const platform = await stack.admin.get('/api/leads/campaigns');
    expectError(platform, 400, 'invalid_request');
    expect(detailPaths(platform)).toEqual(['/firmSlug']);
  });

  it('another firm’s campaign is not found, for every route, and is left unchanged', async () => {
    const created = await createCampaign(a.client, {
      firmSlug: a.slug,
      agentId: agentA,
      leads: [{ phone: '+12125550190' }],
    });
    expectError(await b.client.get(`/api/leads/campaigns/${created.id}`), 404, 'campaign_not_found');
    for (const action of ['launch', 'pause', 'resume', 'cancel']) {
      expectError(
        await b.client.post(`/api/leads/campaigns/${created.id}/${action}`),
        404,
        'campaign_not_found',
      );
    }
    expectError(
      await b.client.post(`/api/leads/campaigns/${created.id}/leads`, { leads: [{ phone: '+12125550191' }] }),
      404,
      'campaign_not_found',
    );
    expect(await getCampaign(a.client, created.id)).toMatchObject({ status: 'draft', leads_total: 1 });
    // The platform key sees every firm's campaign.
    expect((await stack.admin.get(`/api/leads/campaigns/${created.id}`)).body.firm).toBe(a.slug);
    // A lead route is still a lead route.
    expectError(await a.client.get('/api/leads/lead_missing'), 404, 'lead_not_found');
  });
});
