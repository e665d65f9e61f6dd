// Consent (docs/compliance.md#consent): a marketing campaign dials only leads with written
// consent (an AI voice's telemarketing: 47 CFR 64.1200(a)(2)-(3)); the others are skipped,
// each counted in skipped_by_reason and recorded as a dial decision block/consent, and no call is
// created for them. An informational campaign dials every lead with consent of any kind, and
// skips a lead with none (an AI voice's call to a possibly mobile number: 47 U.S.C.
// 227(b)(1)(A)(iii)). A lead made from an inbound call or a chat carries inquiry consent from its
// start. Malformed consent and purpose are 400s. The stack has the production defaults
// CAMPAIGN_DEFAULT_PURPOSE=marketing and INFORMATIONAL_CONSENT=true (the test stack's are
// informational and false): a campaign created without a purpose is a marketing one here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createAgent } from '../calls/support.js';
import { campaignCalls, launch, simulatorDials, usPhones, waitForCampaign } from '../campaigns/support.js';
import { retellCallAnalyzed } from '../webhooks/support.js';
import { createAgent as createChatAgent, createChat, say } from '../chat/chat-helpers.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { documentedResponses } from '../helpers/documented-response.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { SIM_CALL_MS: '200', CAMPAIGN_DEFAULT_PURPOSE: 'marketing', INFORMATIONAL_CONSENT: 'true' },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const DAY_MS = 24 * 3600 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();
const consent = (kind: string, obtainedAt: string) => ({
  kind,
  text: `Consent of kind ${kind} for calls about the matter.`,
  obtained_at: obtainedAt,
  source: 'web_form',
});

type Firm = Awaited<ReturnType<typeof createFirm>>;
async function firmWithAgent(settings: Record<string, unknown> = {}): Promise<Firm & { agentId: string }> {
  const firm = await createFirm(stack, settings);
  return { ...firm, agentId: await createAgent(firm.client, firm.slug) };
}

async function decisionsOf(firm: Firm, campaignId: string): Promise<any[]> {
  const res = await firm.client.get(`/api/compliance/decisions?firmSlug=${firm.slug}&limit=1000`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.decisions.filter((d: any) => d.campaign_id === campaignId);
}

/** Runs a campaign of `leads` to the end; the campaign as GET shows it then. */
async function runCampaign(
  firm: Firm & { agentId: string },
  body: Record<string, unknown>,
  leads: unknown[],
) {
  // Not the campaigns' test helper, which makes them informational: here the default is the point.
  const res = await firm.client.post('/api/leads/campaigns', {
    firmSlug: firm.slug,
    agentId: firm.agentId,
    name: 'Consent',
    ...body,
    leads,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const created = res.body as { id: string };
  const queued = await launch(firm.client, created.id);
  expect(queued).toBe(leads.length);
  return waitForCampaign(
    firm.client,
    created.id,
    (c) => c.status === 'completed' && c.calls_completed + c.calls_failed === leads.length,
  );
}

const ZERO_SKIPS = {
  no_consent: 0,
  consent_expired: 0,
  consent_not_for_marketing: 0,
  dnc: 0,
  country: 0,
  hours: 0,
};

describe('a marketing campaign', () => {
  it('by default: dials only written consent; an inquiry of any age, a client and none are skipped, counted and recorded', async () => {
    const firm = await firmWithAgent();
    const [written, inquiry, oldInquiry, client, none, listed] = usPhones(6, 100);
    const res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: [listed] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const done = await runCampaign(firm, {}, [
      { phone: written, consent: consent('written', daysAgo(400)) },
      { phone: inquiry, consent: consent('inquiry', daysAgo(45)) },
      { phone: oldInquiry, consent: consent('inquiry', daysAgo(91)) },
      { phone: client, consent: consent('existing_client', daysAgo(10)) },
      { phone: none },
      { phone: listed, consent: consent('written', daysAgo(1)) },
    ]);
    console.log(`marketing campaign: ${JSON.stringify(done.skipped_by_reason)}`);
    expect(done.purpose).toBe('marketing');
    expect(done.skipped_by_reason).toEqual({
      ...ZERO_SKIPS,
      no_consent: 1,
      consent_not_for_marketing: 3,
      dnc: 1,
    });
    expect(done).toMatchObject({ calls_queued: 6, calls_completed: 1, calls_failed: 5 });
    // calls_queued counts every callable phone; a skipped one creates no call.
    const skipped = Object.values(done.skipped_by_reason as Record<string, number>).reduce((a, b) => a + b);
    const created = (await campaignCalls(stack, done.id)).map((c) => c.to_number).sort();
    console.log(
      `marketing campaign: calls_queued ${done.calls_queued}, skipped ${skipped}, calls created ${created.length}`,
    );
    expect(created).toEqual([written]);
    expect(created.length).toBe(done.calls_queued - skipped);
    const dialled = (await simulatorDials(stack, [written!, inquiry!, oldInquiry!, client!, none!, listed!]))
      .map((d) => d.to_number)
      .sort();
    expect(dialled).toEqual([written]);

    // Every field of the answers that show consent, purpose and skips is in /openapi.json.
    const expectDocumented = await documentedResponses(stack.api, { closed: true });
    expectDocumented(
      await firm.client.get(`/api/leads/campaigns/${done.id}`),
      'GET',
      '/api/leads/campaigns/{id}',
    );
    expectDocumented(
      await firm.client.get(`/api/leads/campaigns?firmSlug=${firm.slug}`),
      'GET',
      '/api/leads/campaigns',
    );
    expectDocumented(await firm.client.get(`/api/leads?firmSlug=${firm.slug}`), 'GET', '/api/leads');
    expectDocumented(
      await firm.client.get(`/api/compliance/decisions?firmSlug=${firm.slug}`),
      'GET',
      '/api/compliance/decisions',
    );

    const decisions = await decisionsOf(firm, done.id);
    const blocks = decisions
      .filter((d) => d.answer === 'block')
      .map((d) => [d.phone, d.reason, d.consent?.skip ?? null])
      .sort();
    expect(blocks).toEqual(
      [
        [inquiry, 'consent', 'consent_not_for_marketing'],
        [oldInquiry, 'consent', 'consent_not_for_marketing'],
        [client, 'consent', 'consent_not_for_marketing'],
        [none, 'consent', 'no_consent'],
        [listed, 'dnc', null],
      ].sort(),
    );
    const noneDecision = decisions.find((d) => d.phone === none);
    expect(noneDecision.consent).toEqual({
      purpose: 'marketing',
      kind: null,
      obtained_at: null,
      skip: 'no_consent',
    });
    const recent = decisions.find((d) => d.phone === inquiry);
    expect(recent.consent).toMatchObject({
      purpose: 'marketing',
      kind: 'inquiry',
      skip: 'consent_not_for_marketing',
    });
    expect(recent.message).toContain('prior express written consent');
  });

  it('an inquiry of an hour ago is no consent to marketing, whatever inquiry_consent_days says (retired)', async () => {
    const firm = await firmWithAgent({ inquiry_consent_days: 3650 });
    const [fresh, signed] = usPhones(2, 200);
    const done = await runCampaign(firm, { purpose: 'marketing' }, [
      { phone: fresh, consent: consent('inquiry', new Date(Date.now() - 3600_000).toISOString()) },
      { phone: signed, consent: consent('written', daysAgo(1)) },
    ]);
    expect(done.skipped_by_reason).toEqual({ ...ZERO_SKIPS, consent_not_for_marketing: 1 });
    expect((await simulatorDials(stack, [fresh!, signed!])).map((d) => d.to_number)).toEqual([signed]);
    const blocks = (await decisionsOf(firm, done.id)).filter((d) => d.answer === 'block');
    expect(blocks.map((d) => [d.phone, d.reason])).toEqual([[fresh, 'consent']]);
  });
});

describe('an informational campaign', () => {
  it('dials every consent kind, and skips a lead with none: counted, recorded, not dialled', async () => {
    const firm = await firmWithAgent();
    const phones = usPhones(5, 300);
    const done = await runCampaign(firm, { purpose: 'informational' }, [
      { phone: phones[0], consent: consent('written', daysAgo(400)) },
      { phone: phones[1], consent: consent('inquiry', daysAgo(45)) },
      { phone: phones[2], consent: consent('inquiry', daysAgo(400)) },
      { phone: phones[3], consent: consent('existing_client', daysAgo(10)) },
      { phone: phones[4] },
    ]);
    expect(done.purpose).toBe('informational');
    expect(done.skipped_by_reason).toEqual({ ...ZERO_SKIPS, no_consent: 1 });
    expect(done).toMatchObject({ calls_completed: 4, calls_failed: 1 });
    const consented = phones.slice(0, 4);
    expect((await simulatorDials(stack, phones)).map((d) => d.to_number).sort()).toEqual(consented.sort());
    const blocks = (await decisionsOf(firm, done.id)).filter((d) => d.answer === 'block');
    expect(blocks.map((d) => [d.phone, d.reason, d.consent?.skip])).toEqual([
      [phones[4], 'consent', 'no_consent'],
    ]);
    expect(blocks[0].message).toContain('227(b)(1)(A)(iii)');
  });
});

describe('consent on leads', () => {
  it('a lead made from an inbound call carries inquiry consent from the call', async () => {
    const firm = await firmWithAgent();
    const body = retellCallAnalyzed();
    const delivered = await stack.admin.post(`/api/v2/${firm.slug}/webhook`, body);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    const lead = await eventually(async () => {
      const res = await firm.client.get(`/api/leads?firmSlug=${firm.slug}`);
      expect(res.status).toBe(200);
      expect(res.body.leads).toHaveLength(1);
      return res.body.leads[0];
    });
    expect(lead.source).toBe('call');
    expect(lead.consent).toEqual({
      kind: 'inquiry',
      text: 'The person called the firm about their matter (inbound call).',
      obtained_at: new Date(body.call.start_timestamp!).toISOString(),
      source: 'inbound_call',
    });
  });

  it('a lead made from a chat carries inquiry consent from the chat', async () => {
    const firm = await firmWithAgent();
    const { agent_id: chatAgent } = await createChatAgent(firm.client, firm.slug);
    const { chat_id: chatId } = await createChat(firm.client, firm.slug, chatAgent);
    for (const answer of ['Dana Whitfield', '(312) 555-0187', 'dana@example.org']) {
      await say(firm.client, chatId, answer);
    }
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const chat = await stack.services.mongo.db
      .collection<{ _id: string; created_at: Date }>(COLLECTIONS.chats)
      .findOne({ _id: chatId });
    const res = await firm.client.get(`/api/leads?firmSlug=${firm.slug}`);
    const lead = (res.body.leads as any[]).find((l) => l.chat_id === chatId);
    expect(lead.consent).toEqual({
      kind: 'inquiry',
      text: 'The person wrote to the firm about their matter (chat).',
      obtained_at: chat!.created_at.toISOString(),
      source: 'chat',
    });
  });

  it('an API lead keeps the consent it was given; a lead without one has null', async () => {
    const firm = await firmWithAgent();
    const given = {
      ...consent('written', '2026-03-01T12:00:00.000Z'),
      evidence_url: 'https://example.com/form/1',
    };
    const res = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      phone: '+12125550191',
      consent: given,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.consent).toEqual(given);
    const read = await firm.client.get(`/api/leads/${res.body.id}`);
    expect(read.body.consent).toEqual(given);
    const bare = await firm.client.post('/api/leads', { firmSlug: firm.slug, phone: '+12125550192' });
    expect(bare.body.consent).toBeNull();
  });

  it('malformed consent, purpose or inquiry_consent_days is a 400 naming the field; nothing is written', async () => {
    const firm = await firmWithAgent();
    const good = consent('written', '2026-03-01T12:00:00Z');
    const cases: Array<[unknown, string]> = [
      [{ ...good, kind: 'verbal' }, '/consent/kind'],
      [{ ...good, obtained_at: 'yesterday' }, '/consent/obtained_at'],
      [{ ...good, text: '' }, '/consent/text'],
      [{ ...good, text: '   ' }, '/consent/text'],
      [{ ...good, source: ' ' }, '/consent/source'],
      [{ ...good, obtained_at: new Date(Date.now() + 2 * DAY_MS).toISOString() }, '/consent/obtained_at'],
      [{ ...good, evidence_url: 'not a url' }, '/consent/evidence_url'],
      [{ ...good, signed: true }, '/consent/signed'],
      ['written', '/consent'],
    ];
    for (const [bad, path] of cases) {
      const res = await firm.client.post('/api/leads', {
        firmSlug: firm.slug,
        phone: '+12125550193',
        consent: bad,
      });
      expectError(res, 400, 'invalid_request');
      expect(detailPaths(res), JSON.stringify(bad)).toContain(path);
    }
    const missing = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      consent: { kind: 'written', text: 'x', source: 'y' },
    });
    expectError(missing, 400, 'invalid_request');
    expect(detailPaths(missing)).toContain('/consent/obtained_at');
    expect((await firm.client.get(`/api/leads?firmSlug=${firm.slug}`)).body.leads).toEqual([]);

    const base = { firmSlug: firm.slug, name: 'x', agentId: firm.agentId };
    const inline = await firm.client.post('/api/leads/campaigns', {
      ...base,
      leads: [{ phone: '+12125550194', consent: { ...good, kind: 'oral' } }],
    });
    expectError(inline, 400, 'invalid_request');
    expect(detailPaths(inline)).toContain('/leads/0/consent/kind');
    const purpose = await firm.client.post('/api/leads/campaigns', { ...base, purpose: 'sales' });
    expectError(purpose, 400, 'invalid_request');
    expect(detailPaths(purpose)).toEqual(['/purpose']);
    expect((await firm.client.get(`/api/leads/campaigns?firmSlug=${firm.slug}`)).body.campaigns).toEqual([]);
    const draft = await firm.client.post('/api/leads/campaigns', base);
    expect(draft.status, JSON.stringify(draft.body)).toBe(200);
    const added = await firm.client.post(`/api/leads/campaigns/${draft.body.id}/leads`, {
      leads: [
        { phone: '+12125550195' },
        { phone: '+12125550196', consent: { ...good, obtained_at: 'soon' } },
      ],
    });
    expectError(added, 400, 'invalid_request');
    expect(detailPaths(added)).toContain('/leads/1/consent/obtained_at');
    expect((await firm.client.get(`/api/leads/campaigns/${draft.body.id}`)).body.leads_total).toBe(0);
    expect((await firm.client.get(`/api/leads?firmSlug=${firm.slug}`)).body.leads).toEqual([]);

    for (const days of [0, 3651, 1.5, '30']) {
      const created = await stack.admin.post('/api/firms', {
        slug: `firm-consent-${String(days).replace('.', '-')}`,
        name: 'x',
        settings: { inquiry_consent_days: days },
      });
      expectError(created, 400, 'invalid_request');
      expect(detailPaths(created).join(' '), String(days)).toContain('inquiry_consent_days');
    }
  });
});
