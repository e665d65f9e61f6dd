// Opt-outs from any channel put the person's number on the firm's do-not-call list with the
// evidence (docs/compliance.md#opt-outs): a simulated call whose caller says "please stop calling
// me" (a toNumber ending 3333), an inbound call's transcript, a chat and a widget chat. Only the
// person's words count, a look-alike lists nothing, a repeat changes nothing, and a chat with no
// phone number records nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { expectOutboxEmpty } from '../helpers/webhook-outbox.js';
import { createAgent, waitForCall } from '../calls/support.js';
import { createChat, createAgent as createChatAgent, say } from '../chat/chat-helpers.js';
import { mintWidgetToken } from '../../core/domain/access/widget-token.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { eventsOf } from '../helpers/events.js';
import { listCallOptOut } from '../../core/domain/compliance/opt-out-listing.js';
import { createCampaign, launch, simulatorDials, waitForCampaign } from '../campaigns/support.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  stack = await startStack({ workers: true, env: { SIM_CALL_MS: '200' } });
  firm = await createFirm(stack);
  agentId = await createAgent(firm.client, firm.slug);
});
afterAll(async () => {
  await stack?.stop();
});

async function listed(): Promise<any[]> {
  const res = await firm.client.get('/api/compliance/dnc?limit=1000');
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.entries;
}
const entryFor = async (phone: string) => (await listed()).find((e) => e.phone === phone);

/** Calls `toNumber` (whose simulated callee opts out) and waits for its entry on the list. */
async function optOutCall(toNumber: string): Promise<{ callId: string; entry: any }> {
  const created = await firm.client.post('/api/v2/create-outbound-call', {
    toNumber,
    agentId,
    firmSlug: firm.slug,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const callId = created.body.call_id as string;
  const entry = await eventually(async () => {
    const found = await entryFor(toNumber);
    expect(found).toBeDefined();
    return found;
  });
  return { callId, entry };
}

describe('an opt-out in a call', () => {
  it('a simulated caller who says "please stop calling me" is put on the list with the call and the words', async () => {
    const toNumber = '+12125553333';
    const { callId, entry } = await optOutCall(toNumber);
    const ended = await waitForCall(
      firm.client,
      callId,
      (c) => c.status === 'ended' && c.call_analysis !== null,
    );
    expect(ended.transcript).toContain("User: I'm not interested. Please stop calling me.");
    expect(entry).toEqual({
      phone: toNumber,
      firm: firm.slug,
      source: 'call',
      reason: 'Opt-out said in a call',
      evidence: { call_id: callId, words: 'Please stop calling me' },
      added_at: expect.any(String),
      added_by: 'opt_out',
    });
    console.log(`simulated opt-out call ${callId}: listed ${JSON.stringify(entry)}`);
  });

  it('a callee at a possible number of no area code (+1 555 555 3333) is listed too, and can be taken off', async () => {
    // libphonenumber does not call it valid, but create-outbound-call dials it: its opt-out counts.
    const toNumber = '+15555553333';
    const { callId, entry } = await optOutCall(toNumber);
    expect(entry).toMatchObject({ phone: toNumber, source: 'call', evidence: { call_id: callId } });
    // The person's own opt-out: only they can take it back, so its removal says how (a reason).
    const bare = await stack.admin.delete(`/api/compliance/dnc/%2B15555553333?firmSlug=${firm.slug}`);
    expect(bare.status, JSON.stringify(bare.body)).toBe(400);
    expect(bare.body.error.details).toEqual([
      { path: '/reason', message: "is required to remove the person's own opt-out" },
    ]);
    expect(await entryFor(toNumber)).toEqual(entry);
    const reason = encodeURIComponent('The caller asked to be called again, in writing (form 12)');
    const removed = await stack.admin.delete(
      `/api/compliance/dnc/%2B15555553333?firmSlug=${firm.slug}&reason=${reason}`,
    );
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body).toMatchObject({ phone: toNumber, removed: true });
  });

  it('the next campaign skips a number that opted out in a call: not dialled, its decision block/dnc', async () => {
    const optedOut = '+13125553333';
    const other = '+13125550142';
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: optedOut,
      agentId,
      firmSlug: firm.slug,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    await eventually(async () => expect(await entryFor(optedOut)).toBeDefined());
    expect(await simulatorDials(stack, [optedOut])).toHaveLength(1);

    const campaign = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: [{ phone: optedOut }, { phone: other }],
    });
    await launch(firm.client, campaign.id);
    const done = await waitForCampaign(
      firm.client,
      campaign.id,
      (c) => c.calls_completed + c.calls_failed === 2,
    );
    expect(done).toMatchObject({ calls_completed: 1, calls_failed: 1 });
    // The opted-out number was dialled once, by the call in which it opted out; never again.
    expect((await simulatorDials(stack, [optedOut])).map((d) => d.metadata.call_id)).toEqual([
      created.body.call_id,
    ]);
    const decisions = await firm.client.get(
      `/api/compliance/decisions?firmSlug=${firm.slug}&phone=${encodeURIComponent(optedOut)}`,
    );
    expect(decisions.status, JSON.stringify(decisions.body)).toBe(200);
    const forCampaign = decisions.body.decisions.filter((d: any) => d.campaign_id === campaign.id);
    expect(forCampaign.map((d: any) => [d.answer, d.reason])).toEqual([['block', 'dnc']]);
  });

  it('a simulated call without an opt-out lists nothing', async () => {
    const toNumber = '+12125550177';
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber,
      agentId,
      firmSlug: firm.slug,
    });
    await waitForCall(
      firm.client,
      created.body.call_id,
      (c) =>
        c.status === 'ended' && c.call_analysis !== null && !Object.values(c.effects).includes('pending'),
    );
    expect(await entryFor(toNumber)).toBeUndefined();
  });

  const inbound = (callId: string, event: string, transcript: string, from: string) => ({
    event,
    call: {
      call_id: callId,
      agent_id: 'prov_agent',
      direction: 'inbound',
      from_number: from,
      to_number: '+14155550100',
      call_status: 'ended',
      start_timestamp: Date.now() - 60_000,
      end_timestamp: Date.now(),
      transcript,
    },
  });

  it("lists an inbound caller's own number from the transcript; a repeat delivery changes nothing", async () => {
    const from = '+13055553210';
    const transcript =
      'Agent: Thanks for calling.\nUser: Yes. Take me off your list, please.\nAgent: Done.\n';
    const delivered = await stack.admin.post(
      `/api/v2/${firm.slug}/webhook`,
      inbound('prov_inbound_1', 'call_ended', transcript, from),
    );
    expect(delivered.status).toBe(200);
    const entry = await eventually(async () => {
      const found = await entryFor(from);
      expect(found).toBeDefined();
      return found;
    });
    expect(entry).toMatchObject({
      source: 'call',
      evidence: { call_id: expect.any(String), words: 'Take me off your list' },
    });
    // call_analyzed of the same call (the same transcript): already listed, the entry unchanged.
    await stack.admin.post(
      `/api/v2/${firm.slug}/webhook`,
      inbound('prov_inbound_1', 'call_analyzed', transcript, from),
    );
    // The evidence names the call as the API shows it: the inbound call's provider call id.
    expect(entry.evidence.call_id).toBe('prov_inbound_1');
    expect((await stack.admin.get(`/api/v2/get-call/${entry.evidence.call_id}`)).status).toBe(200);
    // The repeat applied (its call event carries no analysis, so the call shows no change): no
    // call event is left to run, nor kept in the webhook outbox, where an add slower than
    // ENQUEUE_TIMEOUT_MS (a loaded machine) sends a delivery until the workers' drain moves it.
    await eventually(async () => {
      await expectOutboxEmpty(stack);
      const counts = await stack.services.queues['call-events'].getJobCounts(
        'waiting',
        'active',
        'delayed',
        'prioritized',
      );
      expect(counts).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 });
    });
    expect(await entryFor(from)).toEqual(entry);
    expect(
      await stack.services.mongo.db.collection(COLLECTIONS.dncEntries).countDocuments({ phone: from }),
    ).toBe(1);
    // One dnc.added, though both deliveries' sweeps record it (the event is the entry's).
    await eventually(async () => {
      const added = (await eventsOf(stack, firm.slug, from)).filter((e) => e.type === 'dnc.added');
      expect(added).toHaveLength(1);
    });
  });

  it('an attempt that died after listing the opt-out: the next one records its dnc.added', async () => {
    const from = '+13055553219';
    const transcript = 'Agent: Hello.\nUser: Stop calling me.\nAgent: Understood.\n';
    // What the dead attempt left: the entry, and no sweep, so no dnc.added.
    await stack.services.mongo.db.collection(COLLECTIONS.dncEntries).insertOne({
      _id: `${firm.slug}:${from}`,
      firm: firm.slug,
      phone: from,
      source: 'call',
      reason: 'Opt-out said in a call',
      evidence: { call_id: 'prov_inbound_died', words: 'Stop calling me' },
      added_at: new Date(),
      added_by: 'opt_out',
    } as never);
    const delivered = await stack.admin.post(
      `/api/v2/${firm.slug}/webhook`,
      inbound('prov_inbound_died', 'call_ended', transcript, from),
    );
    expect(delivered.status).toBe(200);
    await eventually(async () => {
      const added = (await eventsOf(stack, firm.slug, from)).filter((e) => e.type === 'dnc.added');
      expect(added).toHaveLength(1);
      expect(added[0]!.data).toMatchObject({ phone: from, source: 'call' });
    });
    // The job once more (a retry of the whole job): its sweep records the same event, not a second.
    const call = await stack.services.mongo.db
      .collection(COLLECTIONS.calls)
      .findOne({ firm: firm.slug, provider_call_id: 'prov_inbound_died' });
    expect(await listCallOptOut(stack.services, call as never)).toBe('already_listed');
    await eventually(async () => {
      const sweeps = await stack.services.queues.campaigns.getJobs(['completed']);
      expect(sweeps.filter((j) => j.name === 'dnc-sweep' && j.data.listed?.includes(from))).toHaveLength(2);
    });
    const added = (await eventsOf(stack, firm.slug, from)).filter((e) => e.type === 'dnc.added');
    expect(added).toHaveLength(1);
  });

  it('does not read a call that reached voicemail: a machine was talking', async () => {
    const from = '+13055553212';
    const body = inbound('prov_inbound_3', 'call_ended', 'Agent: Hello?\nUser: Stop calling me.\n', from);
    (body.call as Record<string, unknown>).disconnection_reason = 'voicemail_reached';
    await stack.admin.post(`/api/v2/${firm.slug}/webhook`, body);
    await eventually(async () => {
      const call = await stack.services.mongo.db
        .collection(COLLECTIONS.calls)
        .findOne({ firm: firm.slug, provider_call_id: 'prov_inbound_3' });
      expect(call?.status).toBe('ended');
    });
    expect(await entryFor(from)).toBeUndefined();
  });

  it("ignores the agent's words and a look-alike of the caller", async () => {
    const from = '+13055553211';
    const transcript =
      'Agent: If you want us to stop calling you, just say "stop calling me".\nUser: No, don\'t stop, call me tomorrow.\n';
    await stack.admin.post(
      `/api/v2/${firm.slug}/webhook`,
      inbound('prov_inbound_2', 'call_ended', transcript, from),
    );
    await eventually(async () => {
      const call = await stack.services.mongo.db
        .collection(COLLECTIONS.calls)
        .findOne({ firm: firm.slug, provider_call_id: 'prov_inbound_2' });
      expect(call?.status).toBe('ended');
    });
    // The job that stored the call is the job that would have listed it: done, nothing listed.
    expect(await entryFor(from)).toBeUndefined();
  });
});

describe('an opt-out in a chat', () => {
  let chatAgent: string;
  beforeAll(async () => {
    chatAgent = (
      await createChatAgent(firm.client, firm.slug, {
        intake_questions: [
          { key: 'full_name', question: 'May I have your full name?' },
          { key: 'phone', question: 'What number can we reach you on?' },
        ],
      })
    ).agent_id;
  });

  it("lists the chat's phone number with the chat and the words as soon as the message is answered", async () => {
    const phone = '+14155553001';
    const chat = await createChat(firm.client, firm.slug, chatAgent, { phone });
    await say(firm.client, chat.chat_id, 'Hello. Please take me off your list.');
    expect(await entryFor(phone)).toMatchObject({
      source: 'chat',
      reason: 'Opt-out written in a chat',
      evidence: { chat_id: chat.chat_id, words: 'Please take me off your list' },
      added_by: 'opt_out',
    });
  });

  it('a widget chat is source "widget", with the number the intake collected', async () => {
    const phone = '+14155553002';
    const widget = stack.api.withToken((await mintWidgetToken(firm.slug, stack.config.sessionSecret)).token);
    // A widget token's dynamic variables are ignored: the number comes from the conversation.
    const chat = await createChat(widget, firm.slug, chatAgent);
    await say(widget, chat.chat_id, 'Sam Poe');
    await say(widget, chat.chat_id, '(415) 555-3002');
    expect(await entryFor(phone)).toBeUndefined();
    await say(widget, chat.chat_id, 'unsubscribe');
    expect(await entryFor(phone)).toMatchObject({
      source: 'widget',
      evidence: { chat_id: chat.chat_id, words: 'unsubscribe' },
    });
  });

  it('a chat without a phone number records nothing; the number is listed as soon as it is given', async () => {
    const before = (await listed()).length;
    const chat = await createChat(firm.client, firm.slug, chatAgent);
    await say(firm.client, chat.chat_id, 'Stop contacting me.');
    expect((await listed()).length).toBe(before);
    await say(firm.client, chat.chat_id, 'Jane Roe');
    expect((await listed()).length).toBe(before);
    // The number, given later, in a chat that is never ended (the widget closed).
    await say(firm.client, chat.chat_id, '415 555 3003');
    expect(await entryFor('+14155553003')).toMatchObject({
      source: 'chat',
      evidence: { chat_id: chat.chat_id, words: 'Stop contacting me' },
    });
    const ended = await firm.client.post('/api/v2/end-chat', { chatId: chat.chat_id });
    expect(ended.status, JSON.stringify(ended.body)).toBe(200);
    expect((await listed()).filter((e) => e.phone === '+14155553003')).toHaveLength(1);
  });

  it('an end-chat that died after ending the chat: its repeat (409) still lists the opt-out', async () => {
    const chat = await createChat(firm.client, firm.slug, chatAgent);
    await say(firm.client, chat.chat_id, 'Nina Park');
    await say(firm.client, chat.chat_id, 'Do not call me again. My number is 415 555 3014');
    const phone = '+14155553014';
    // What the dead request left: the chat ended, nothing listed.
    await stack.services.mongo.db
      .collection(COLLECTIONS.dncEntries)
      .deleteOne({ _id: `${firm.slug}:${phone}` as never });
    await stack.services.mongo.db
      .collection(COLLECTIONS.chats)
      .updateOne({ _id: chat.chat_id as never }, { $set: { status: 'ended', ended_at: new Date() } });
    expect(await entryFor(phone)).toBeUndefined();
    const again = await firm.client.post('/api/v2/end-chat', { chatId: chat.chat_id });
    expect(again.status).toBe(409);
    expect(await entryFor(phone)).toMatchObject({ source: 'chat', evidence: { chat_id: chat.chat_id } });
  });

  it('a chat with no number at all lists nothing, even at its end', async () => {
    const before = (await listed()).length;
    const chat = await createChat(firm.client, firm.slug, chatAgent);
    await say(firm.client, chat.chat_id, "Don't call me again.");
    expect((await firm.client.post('/api/v2/end-chat', { chatId: chat.chat_id })).status).toBe(200);
    expect((await listed()).length).toBe(before);
  });

  it('a look-alike in a chat lists nothing', async () => {
    const phone = '+14155553004';
    const chat = await createChat(firm.client, firm.slug, chatAgent, { phone });
    await say(firm.client, chat.chat_id, "Don't stop, call me tomorrow.");
    expect((await firm.client.post('/api/v2/end-chat', { chatId: chat.chat_id })).status).toBe(200);
    expect(await entryFor(phone)).toBeUndefined();
  });
});
