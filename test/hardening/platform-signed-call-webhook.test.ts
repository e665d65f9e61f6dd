// A call webhook signed with the platform's RETELL_API_KEY (Retell signs every delivery of the
// shared account with it) was accepted for every firm: one delivery, sent to two firms' URLs,
// made the same inbound call in both. Such a delivery is now taken only by the firm that owns the
// call: its agent (an agent of the firm with that provider_agent_id), its number (the firm's
// from_number, the line called or calling), or our own call id in its metadata; any other firm
// answers 403 and stores nothing. And one provider call becomes an inbound call in one firm only.
// A firm's own voice_webhook_secret still signs anything for that firm.
import { sign as retellSign } from 'retell-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWebhook, retellPhoneCall } from '../fakes/retell-fixtures.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { callForProvider, callsOf, queuesIdle } from '../webhooks/support.js';
import { newOutboundCall } from '../../core/domain/calls/calls.js';
import { inboundCallId } from '../../core/domain/calls/call-keys.js';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { eventually } from '../helpers/eventually.js';

const RETELL_API_KEY = 'key_retell_account_platform_signed_0123';
const OWN_SECRET = 'whsec_platform_signed_own_secret';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true, env: { RETELL_API_KEY } });
});
afterAll(async () => stack?.stop());

/** An inbound call_started of a provider call to `toNumber`, by provider agent `agentId`. */
const inbound = (agentId: string, toNumber: string) => {
  const call = {
    ...retellPhoneCall({
      direction: 'inbound',
      call_status: 'ongoing',
      fromNumber: `+1415555${String(1000 + Math.floor(Math.random() * 8999))}`,
      toNumber,
    }),
    agent_id: agentId,
  };
  return { call, raw: JSON.stringify(callWebhook('call_started', call)) };
};

async function deliver(slug: string, raw: string, key: string) {
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': await retellSign(raw, key) },
  });
}

/** An agent of the firm on that provider agent, made by the platform; its id. */
async function createAgentOn(slug: string, providerAgentId: string): Promise<string> {
  const agent = await stack.admin.post('/api/v2/create-agent', {
    firmSlug: slug,
    agent_name: 'Intake',
    voice_id: 'sim-en-us-ava',
    provider_agent_id: providerAgentId,
  });
  expect(agent.status).toBe(200);
  return agent.body.agent_id as string;
}

async function firmWithAgent(providerAgentId: string, settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, settings);
  await createAgentOn(firm.slug, providerAgentId);
  return firm;
}

const callsIn = (firm: string, providerCallId: string) =>
  callsOf(stack).countDocuments({ firm, provider_call_id: providerCallId });

describe('a call webhook signed with the platform RETELL_API_KEY', () => {
  it('is taken only by the firm whose agent the call is on: another firm answers 403 and stores nothing', async () => {
    const agentId = `agent_${rand(6)}`;
    const owner = await firmWithAgent(agentId);
    const other = await createFirm(stack);
    const { call, raw } = inbound(agentId, '+14155550111');

    const refused = await deliver(other.slug, raw, RETELL_API_KEY);
    expectError(refused, 403, 'forbidden');
    expect((await deliver(owner.slug, raw, RETELL_API_KEY)).status).toBe(200);

    await callForProvider(stack, owner.slug, call.call_id);
    await queuesIdle(stack);
    expect(await callsIn(other.slug, call.call_id)).toBe(0);
  });

  it('is taken by the firm whose number was called, and by no firm that owns neither agent nor number', async () => {
    const number = `+1415556${String(1000 + Math.floor(Math.random() * 8999))}`;
    const owner = await createFirm(stack, { from_number: number });
    const stranger = await createFirm(stack, { from_number: '+14155550999' });
    const { call, raw } = inbound(`agent_${rand(6)}`, number);

    expectError(await deliver(stranger.slug, raw, RETELL_API_KEY), 403, 'forbidden');
    expect((await deliver(owner.slug, raw, RETELL_API_KEY)).status).toBe(200);
    await callForProvider(stack, owner.slug, call.call_id);
    await queuesIdle(stack);
    expect(await callsIn(stranger.slug, call.call_id)).toBe(0);
  });

  it('makes one inbound call in one firm, even when two firms own the agent', async () => {
    // provider_agent_id is set by the platform only; set on two firms' agents, it is a mistake
    // that must still not let one provider call into both.
    const agentId = `agent_${rand(6)}`;
    const first = await firmWithAgent(agentId);
    const second = await firmWithAgent(agentId);
    const { call, raw } = inbound(agentId, '+14155550112');

    expect((await deliver(first.slug, raw, RETELL_API_KEY)).status).toBe(200);
    expectError(await deliver(second.slug, raw, RETELL_API_KEY), 403, 'forbidden');
    // The first firm goes on receiving the call's later events.
    const ended = JSON.stringify(callWebhook('call_ended', { ...call, call_status: 'ended' }));
    expect((await deliver(first.slug, ended, RETELL_API_KEY)).status).toBe(200);

    await callForProvider(stack, first.slug, call.call_id);
    await queuesIdle(stack);
    expect(await callsIn(second.slug, call.call_id)).toBe(0);
  });

  it('is taken by the firm whose call it names by our own call_id (no metadata); another firm answers 403', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const firmDoc = (await getFirm(stack.services.mongo.db, firm.slug))!;
    const ours = newOutboundCall(
      { firm: firmDoc, agent: { _id: 'agent_ours' } as AgentDoc, toNumber: '+14155550123' },
      'retell',
    );
    await callsOf(stack).insertOne(ours); // written directly: no dial to Retell
    const call = {
      ...retellPhoneCall({ call_status: 'ended', callId: ours._id }),
      agent_id: `agent_${rand(6)}`,
    };
    const raw = JSON.stringify(callWebhook('call_ended', { ...call, metadata: {} }));

    expectError(await deliver(other.slug, raw, RETELL_API_KEY), 403, 'forbidden');
    expect((await deliver(firm.slug, raw, RETELL_API_KEY)).status).toBe(200);
    await eventually(async () =>
      expect((await callsOf(stack).findOne({ _id: ours._id }))?.status).toBe('ended'),
    );
    await queuesIdle(stack);
    expect(await callsOf(stack).findOne({ _id: inboundCallId(firm.slug, ours._id) })).toBeNull();
    expect(await callsOf(stack).findOne({ _id: inboundCallId(other.slug, ours._id) })).toBeNull();
  });

  it("leaves a firm's own secret as it was: it signs any call for that firm", async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: OWN_SECRET });
    const { call, raw } = inbound(`agent_${rand(6)}`, '+14155550113');
    // The platform key is refused for a call that is not the firm's, the firm's own key is not.
    expectError(await deliver(firm.slug, raw, RETELL_API_KEY), 403, 'forbidden');
    expect((await deliver(firm.slug, raw, OWN_SECRET)).status).toBe(200);
    await callForProvider(stack, firm.slug, call.call_id);
  });

  it("is refused by the agent tools too: a platform-signed tool call of another firm's call books nothing", async () => {
    const agentId = `agent_${rand(6)}`;
    const owner = await firmWithAgent(agentId);
    const other = await createFirm(stack);
    const { call } = inbound(agentId, '+14155550114');
    const raw = JSON.stringify({ name: 'check_availability', call, args: {} });
    const post = async (slug: string) =>
      stack.api.request('POST', `/api/v2/${slug}/tools/check_availability`, {
        rawBody: raw,
        headers: {
          'Content-Type': 'application/json',
          'x-retell-signature': await retellSign(raw, RETELL_API_KEY),
        },
      });
    expectError(await post(other.slug), 403, 'forbidden');
    // The owner gets past it (to "no calendar configured", its own business).
    expectError(await post(owner.slug), 409, 'booking_not_configured');
  });
});

// Whose agent a call is on is read by point reads: a key document per firm and provider agent id
// (core/domain/agents/agent-keys.ts), never a query on every firm's agents (FerretDB scans the
// table for it). A key may go stale (its agent deleted or given another id): it is checked
// against the agent, and only then are the firm's agents asked.
describe("a platform-signed call on a firm's agent, found by its key", () => {
  const agentKeys = () => stack.services.mongo.db.collection<{ _id: string; agent?: string }>('agent_keys');
  const agentsOf = () => stack.services.mongo.db.collection<AgentDoc>('agents');
  /** An agent stored as a version before the keys stored it: no key document. */
  const storedBefore = async (firm: string, providerAgentId: string) => {
    const now = new Date();
    const _id = `agent_${rand(12)}`;
    await agentsOf().insertOne({
      _id,
      firm,
      agent_name: 'Stored before the keys',
      voice_id: 'sim-en-us-ava',
      language: 'en-US',
      prompt: '',
      begin_message: 'Hello.',
      intake_questions: [],
      provider_agent_id: providerAgentId,
      created_at: now,
      updated_at: now,
    });
    return _id;
  };
  const takes = async (slug: string, providerAgentId: string) =>
    (await deliver(slug, inbound(providerAgentId, '+14155550121').raw, RETELL_API_KEY)).status;

  it('keys the agents a firm had before the keys existed, once, then believes an absent key', async () => {
    const firm = await createFirm(stack);
    const old = `agent_${rand(6)}`;
    const oldAgent = await storedBefore(firm.slug, old);
    expect(await agentKeys().findOne({ _id: `*|${firm.slug}` })).toBeNull();

    expect(await takes(firm.slug, old)).toBe(200);
    expect(await agentKeys().findOne({ _id: `${firm.slug}|${old}` })).toMatchObject({ agent: oldAgent });
    expect(await agentKeys().findOne({ _id: `*|${firm.slug}` })).not.toBeNull();

    // From now on the keys are the answer: an agent written past them (no key) is not found,
    // which a query on the agents would have found.
    const unkeyed = `agent_${rand(6)}`;
    const unkeyedAgent = await storedBefore(firm.slug, unkeyed);
    expectError(
      await deliver(firm.slug, inbound(unkeyed, '+14155550122').raw, RETELL_API_KEY),
      403,
      'forbidden',
    );
    // The platform sending it its id again writes its key.
    const again = await stack.admin.patch(`/api/v2/update-agent/${unkeyedAgent}`, {
      provider_agent_id: unkeyed,
    });
    expect(again.status).toBe(200);
    expect(await takes(firm.slug, unkeyed)).toBe(200);
    // One made through the API is keyed before it is stored.
    const made = `agent_${rand(6)}`;
    const madeAgent = await createAgentOn(firm.slug, made);
    expect(await agentKeys().findOne({ _id: `${firm.slug}|${made}` })).toMatchObject({ agent: madeAgent });
    expect(await takes(firm.slug, made)).toBe(200);
  });

  it("follows an agent's new provider agent id, and not its old one, nor a deleted agent's", async () => {
    const first = `agent_${rand(6)}`;
    const firm = await firmWithAgent(first);
    const agentId = (await agentKeys().findOne({ _id: `${firm.slug}|${first}` }))!.agent!;
    expect(await takes(firm.slug, first)).toBe(200);

    const second = `agent_${rand(6)}`;
    expect(
      (await stack.admin.patch(`/api/v2/update-agent/${agentId}`, { provider_agent_id: second })).status,
    ).toBe(200);
    expect(await takes(firm.slug, second)).toBe(200);
    // The old id's key is stale (its agent has another id now) and no other agent has it.
    expectError(
      await deliver(firm.slug, inbound(first, '+14155550123').raw, RETELL_API_KEY),
      403,
      'forbidden',
    );

    expect((await stack.admin.delete(`/api/v2/delete-agent/${agentId}`)).status).toBe(200);
    expectError(
      await deliver(firm.slug, inbound(second, '+14155550124').raw, RETELL_API_KEY),
      403,
      'forbidden',
    );
  });

  it('finds the other agent of the firm that shares a provider agent id when the key names one that left it', async () => {
    const shared = `agent_${rand(6)}`;
    const firm = await firmWithAgent(shared);
    const firstAgent = (await agentKeys().findOne({ _id: `${firm.slug}|${shared}` }))!.agent!;
    const secondAgent = await createAgentOn(firm.slug, shared);
    // The key names the second agent now; that one moves to another id.
    expect(await agentKeys().findOne({ _id: `${firm.slug}|${shared}` })).toMatchObject({
      agent: secondAgent,
    });
    const moved = `agent_${rand(6)}`;
    expect(
      (await stack.admin.patch(`/api/v2/update-agent/${secondAgent}`, { provider_agent_id: moved })).status,
    ).toBe(200);

    expect(await takes(firm.slug, shared)).toBe(200);
    expect(await agentKeys().findOne({ _id: `${firm.slug}|${shared}` })).toMatchObject({ agent: firstAgent });
  });
});
