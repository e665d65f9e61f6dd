// Domain events recorded once each, at their change (docs/events.md#event-types), through the real
// API, workers and simulator: a dialled call that is answered and analysed, a re-analysis that
// changes the caller's details, leads made by the API and by a campaign, a campaign launched and
// completed, a CSV import, do-not-call additions. Every event's body conforms to its type's schema
// (test/helpers/events.ts); a replayed delivery or a completed job run again records nothing new;
// one firm's events never carry another's. (Appointments: test/appointments/calcom-lifecycle;
// the kill switch's pause: test/campaigns/kill-switch; a Clio sync: test/contacts/clio-sync.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { eventDocs, eventsOf, rerunCompleted, typesOf, type RecordedEvent } from '../helpers/events.js';
import { createAgent, waitForCall } from '../calls/support.js';
import { createCampaign, launch, waitForCampaign } from '../campaigns/support.js';
import { JANE, retellCallAnalyzed } from '../webhooks/support.js';

let stack: Stack;
type Firm = Awaited<ReturnType<typeof createFirm>>;
let firm: Firm;
let other: Firm;

beforeAll(async () => {
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: '100' } });
  [firm, other] = await Promise.all([createFirm(stack), createFirm(stack)]);
});
afterAll(() => stack?.stop());

const ids = (events: RecordedEvent[]) => events.map((e) => e.id).sort();
const ofType = (events: RecordedEvent[], type: string) => events.filter((e) => e.type === type);

describe('a dialled call, answered and analysed', () => {
  it('records call.started, call.ended, call.analyzed (outcome, caller data, lead_id) and lead.created, each once; re-run steps add none', async () => {
    const agentId = await createAgent(firm.client, firm.slug);
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId,
      firmSlug: firm.slug,
      dynamicVariables: { full_name: 'Maria Lopez', email: 'maria.lopez@example.com' },
    });
    expect(created.status).toBe(200);
    const callId = created.body.call_id as string;
    const call = await waitForCall(firm.client, callId, (c) => c.effects.lead === 'done');
    const leadId = call.lead_id as string;

    const events = await eventually(async () => {
      const all = await eventsOf(stack, firm.slug);
      expect(typesOf(all.filter((e) => e.subject === leadId))).toEqual(['lead.created']);
      return all;
    });
    const ofCall = events.filter((e) => e.subject === callId);
    expect(typesOf(ofCall).sort()).toEqual(['call.analyzed', 'call.ended', 'call.started']);
    const [analyzed] = ofType(ofCall, 'call.analyzed');
    expect(analyzed!.data).toMatchObject({
      call_id: callId,
      firm: firm.slug,
      outcome: 'conversation',
      lead_id: leadId,
      caller_data: { email: 'maria.lopez@example.com', first_name: 'Maria', last_name: 'Lopez' },
    });
    expect(ofType(ofCall, 'call.ended')[0]!.data).toMatchObject({
      status: 'ended',
      to_number: '+14155550123',
    });
    expect(ofType(ofCall, 'call.started')[0]!.data).toMatchObject({ call_id: callId, direction: 'outbound' });
    const [leadCreated] = ofType(events, 'lead.created').filter((e) => e.subject === leadId);
    expect(leadCreated!.data).toMatchObject({
      id: leadId,
      call_id: callId,
      email: 'maria.lopez@example.com',
    });
    // The started and ended events happened when the provider said (the call's own times).
    expect(ofType(ofCall, 'call.started')[0]!.occurred_at.getTime()).toBe(call.start_timestamp);
    expect(ofType(ofCall, 'call.ended')[0]!.occurred_at.getTime()).toBe(call.end_timestamp);

    // Every step of the call run again with its own data (a retried job): nothing new; and had a
    // step died after its change, before its event, its retry records that same event.
    const before = ids(await eventsOf(stack, firm.slug));
    await eventDocs(stack).deleteMany({ firm: firm.slug, subject: callId });
    expect(await rerunCompleted(stack, 'callEvent')).toBeGreaterThanOrEqual(3);
    expect(await rerunCompleted(stack, 'analyzeCall')).toBeGreaterThanOrEqual(1);
    await rerunCompleted(stack, 'callEffect');
    expect(ids(await eventsOf(stack, firm.slug))).toEqual(before);
  });
});

describe('a re-analysis that changes what the caller said', () => {
  it('records lead.updated with the changed fields once; the same analysis again records nothing', async () => {
    const first = retellCallAnalyzed();
    const providerCallId = first.call.call_id;
    const webhook = (body: unknown) => firm.client.post(`/api/v2/${firm.slug}/webhook`, body);
    expect((await webhook(first)).status).toBe(200);
    const created = await eventually(async () => {
      const [lead] = ofType(await eventsOf(stack, firm.slug), 'lead.created').filter(
        (e) => e.data.email === 'jane.oneil@example.com',
      );
      expect(lead).toBeDefined();
      return lead!;
    });

    const second = retellCallAnalyzed({
      providerCallId,
      caller: { ...JANE, email: 'jane.new@example.com' },
    });
    expect((await webhook(second)).status).toBe(200);
    const updated = await eventually(async () => {
      const events = await eventsOf(stack, firm.slug, created.subject);
      expect(typesOf(events)).toEqual(['lead.created', 'lead.updated']);
      return events[1]!;
    });
    expect(updated.data).toMatchObject({ id: created.subject, email: 'jane.new@example.com' });
    expect(updated.data.changed_fields).toContain('email');
    expect(updated.data.changed_fields).not.toContain('first_name');
    // Two analyses of the call: two call.analyzed, its call.ended once.
    // (the second call.analyzed is recorded by its own analysis job, which may end after the lead's update)
    await eventually(async () => {
      const ofCall = await eventsOf(stack, firm.slug, created.data.call_id);
      expect(typesOf(ofCall).sort()).toEqual(['call.analyzed', 'call.analyzed', 'call.ended']);
    });

    // The second analysis delivered again, and its jobs run again: nothing new.
    expect((await webhook(second)).status).toBe(200);
    await rerunCompleted(stack, 'analyzeCall');
    expect(typesOf(await eventsOf(stack, firm.slug, created.subject))).toEqual([
      'lead.created',
      'lead.updated',
    ]);
  });
});

describe('leads, a campaign, an import and do-not-call additions', () => {
  it('a lead made by the API: lead.created carrying what the API answered', async () => {
    const res = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      first_name: 'Ana',
      phone: '+1 (212) 555-0147',
    });
    expect(res.status).toBe(200);
    const events = await eventsOf(stack, firm.slug, res.body.id);
    expect(typesOf(events)).toEqual(['lead.created']);
    expect(events[0]!.data).toEqual(res.body);
  });

  it('a campaign: campaign.launched and campaign.completed once, lead.created for each inline lead, call.ended for each call', async () => {
    const agentId = await createAgent(firm.client, firm.slug);
    // Numbers the simulator does not answer, not retried: the campaign ends quickly, with no analysis.
    const campaign = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      retry_on: [],
      leads: [
        { first_name: 'Ben', phone: '+12125550000' },
        { first_name: 'Cy', phone: '+13125550000' },
      ],
    });
    await launch(firm.client, campaign.id);
    const done = await waitForCampaign(firm.client, campaign.id, (c) => c.status === 'completed');
    const events = await eventually(async () => {
      const of = await eventsOf(stack, firm.slug, campaign.id);
      expect(typesOf(of)).toEqual(['campaign.launched', 'campaign.completed']);
      return of;
    });
    expect(events[0]!.data).toMatchObject({ id: campaign.id, status: 'running', calls_queued: 2 });
    expect(events[1]!.data).toEqual(done);
    const all = await eventsOf(stack, firm.slug);
    const leads = ofType(all, 'lead.created').filter((e) => e.data.campaign_id === campaign.id);
    expect(leads.map((e) => e.data.first_name).sort()).toEqual(['Ben', 'Cy']);
    const calls = all.filter((e) => e.type.startsWith('call.') && e.data.campaign_id === campaign.id);
    expect(calls.map((e) => [e.type, e.data.status])).toEqual([
      ['call.ended', 'not_connected'],
      ['call.ended', 'not_connected'],
    ]);

    // Run again (and had they died before their events: those events again, the same ids).
    const before = ids(all);
    await eventDocs(stack).deleteMany({ firm: firm.slug, subject: campaign.id });
    expect(await rerunCompleted(stack, 'campaignFanout')).toBeGreaterThanOrEqual(1);
    await rerunCompleted(stack, 'campaignCall');
    // The last call's end completed the campaign: its call-event job again.
    await rerunCompleted(stack, 'callEvent');
    expect(ids(await eventsOf(stack, firm.slug))).toEqual(before);
  });

  it('a CSV import: contacts.import.completed once, with its counts', async () => {
    const res = await firm.client.post('/api/contacts/import', {
      firmSlug: firm.slug,
      contacts: [
        { first_name: 'Dee', phone: '+12125550191' },
        { first_name: 'Eve', email: 'eve@example.com' },
        { first_name: 'Dee again', phone: '+12125550191' },
      ],
    });
    expect(res.status).toBe(200);
    const [event] = await eventually(async () => {
      const found = ofType(await eventsOf(stack, firm.slug), 'contacts.import.completed');
      expect(found).toHaveLength(1);
      return found;
    });
    expect(event!.data).toEqual({ job_id: event!.subject, status: 'completed', ...res.body });
    expect(event!.data).toMatchObject({ imported: 2, duplicates: 1, errors: 0 });
    await eventDocs(stack).deleteOne({ _id: event!.id });
    expect(await rerunCompleted(stack, 'importContacts')).toBe(1);
    expect(await rerunCompleted(stack, 'importContacts')).toBe(1);
    expect(ofType(await eventsOf(stack, firm.slug), 'contacts.import.completed')).toEqual([event]);
  });

  it('do-not-call additions: dnc.added per number added, none for a number listed already; the other firm sees only its own', async () => {
    const add = (f: Firm, phones: string[]) =>
      f.client.post('/api/compliance/dnc', { firmSlug: f.slug, phones, reason: 'Asked by letter' });
    expect((await add(firm, ['+13055550101', '+13055550102'])).body.added).toBe(2);
    expect((await add(firm, ['+13055550101', '+13055550103'])).body.added).toBe(1);
    expect((await add(other, ['+13055550101'])).body.added).toBe(1);

    const listed = (await firm.client.get(`/api/compliance/dnc?firmSlug=${firm.slug}`)).body.entries;
    // Recorded by each addition's sweep job, after the request answered.
    const events = await eventually(async () => {
      const found = ofType(await eventsOf(stack, firm.slug), 'dnc.added');
      expect(found.map((e) => e.subject).sort()).toEqual(['+13055550101', '+13055550102', '+13055550103']);
      return found;
    });
    for (const event of events)
      expect(event.data).toEqual(listed.find((e: any) => e.phone === event.subject));

    await eventually(async () => {
      const theirs = await eventsOf(stack, other.slug);
      expect(theirs.map((e) => [e.type, e.subject, e.data.firm])).toEqual([
        ['dnc.added', '+13055550101', other.slug],
      ]);
    });
    // Nothing of this firm's carries another firm's slug anywhere in its data.
    for (const event of await eventsOf(stack, firm.slug)) {
      expect(event.firm).toBe(firm.slug);
      expect(JSON.stringify(event.data)).not.toContain(other.slug);
    }
  });
});
