import { expect } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { CallDoc } from '../../core/domain/calls/calls.js';
import type { LeadDoc } from '../../core/domain/leads/leads.js';
import { eventually } from '../helpers/eventually.js';
import { expectOutboxEmpty } from '../helpers/webhook-outbox.js';
import { rand, startStack, type Stack } from '../helpers/stack.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { conversationAnalysis } from '../fakes/retell-fixtures.js';

export interface Caller {
  first_name: string;
  last_name: string;
  phone: string;
  email: string;
  case_type: string;
  urgency: string;
  summary: string;
}

export const JANE: Caller = {
  first_name: 'Jane',
  last_name: "O'Neil <b>",
  phone: '(415) 555-0142',
  email: 'Jane.ONeil@Example.com',
  case_type: 'Personal Injury',
  urgency: 'high',
  summary:
    'Rear-ended at a red light on 3/2; neck pain; insurer calling her. Wants a callback before Friday & <script>alert(1)</script>.',
};

/**
 * A call_analyzed webhook body as Retell sends it (retell-sdk's PhoneCallResponse): the fields
 * the service reads and the ones it must ignore (transcript_object, latency, call_cost, ...).
 */
export function retellCallAnalyzed(
  options: {
    providerCallId?: string;
    ourCallId?: string;
    caller?: Caller;
    callStatus?: PhoneCallResponse['call_status'];
  } = {},
): { event: 'call_analyzed'; call: PhoneCallResponse } {
  const caller = options.caller ?? JANE;
  const start = 1_714_000_000_000;
  const lines: Array<['agent' | 'user', string]> = [
    ['agent', 'Thank you for calling Smith & Partners. May I have your full name?'],
    ['user', `${caller.first_name} ${caller.last_name}.`],
    ['agent', 'What number can we reach you on?'],
    ['user', caller.phone],
    ['agent', 'And your email address?'],
    ['user', caller.email],
    ['agent', 'Briefly, what happened?'],
    ['user', 'I was rear-ended at a red light and my neck still hurts.'],
  ];
  return {
    event: 'call_analyzed',
    call: {
      call_type: 'phone_call',
      call_id: options.providerCallId ?? `call_${rand(12)}`,
      agent_id: 'agent_4f2c9b1d7e',
      agent_version: 3,
      agent_name: 'Intake line',
      call_status: options.callStatus ?? 'ended',
      direction: 'inbound',
      from_number: '+14155550142',
      to_number: '+14155550100',
      start_timestamp: start,
      end_timestamp: start + 185_000,
      duration_ms: 185_000,
      disconnection_reason: 'user_hangup',
      transcript:
        lines.map(([role, text]) => `${role === 'agent' ? 'Agent' : 'User'}: ${text}`).join('\n') + '\n',
      transcript_object: lines.map(([role, content], i) => ({
        role,
        content,
        words: content
          .split(' ')
          .map((word, j) => ({ word, start: i * 5 + j * 0.3, end: i * 5 + j * 0.3 + 0.25 })),
      })),
      transcript_with_tool_calls: lines.map(([role, content]) => ({ role, content, words: [] })),
      recording_url: 'https://dxc03zgurdly9.cloudfront.net/recording.wav',
      public_log_url: 'https://dxc03zgurdly9.cloudfront.net/public.log',
      metadata: options.ourCallId === undefined ? { source: 'website' } : { call_id: options.ourCallId },
      retell_llm_dynamic_variables: { customer_name: caller.first_name },
      collected_dynamic_variables: {},
      latency: { e2e: { p50: 800, p90: 1200, p95: 1500, p99: 2000, max: 2500, min: 500, num: 8 } },
      call_cost: {
        product_costs: [{ product: 'elevenlabs_tts', unit_price: 1, cost: 60 }],
        total_duration_seconds: 185,
        total_duration_unit_price: 1,
        combined_cost: 70,
      },
      call_analysis: conversationAnalysis(caller),
    } satisfies PhoneCallResponse,
  };
}

/** POSTs a webhook body signed as Retell signs it (x-retell-signature). */
export function postSigned(stack: Stack, slug: string, secret: string, body: unknown, timestampMs?: number) {
  const raw = JSON.stringify(body);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'x-retell-signature': signRetellWebhook(raw, secret, timestampMs),
    },
  });
}

export const callsOf = (stack: Stack) => stack.services.mongo.db.collection<CallDoc>(COLLECTIONS.calls);
/**
 * A call as stored, with its effects' records from its own effects document (call_effects)
 * where the recorder keeps them: `effects`, `crm_sync` are the records document's, never the call's.
 */
export async function storedCall(stack: Stack, callId: string): Promise<CallDoc | null> {
  const db = stack.services.mongo.db;
  const call = await callsOf(stack).findOne({ _id: callId });
  if (call === null) return null;
  const records = await db.collection<CallDoc>(COLLECTIONS.callEffects).findOne({ _id: callId });
  return { ...call, effects: records?.effects, crm_sync: records?.crm_sync };
}

export const leadsOf = (stack: Stack) => stack.services.mongo.db.collection<LeadDoc>(COLLECTIONS.leads);

/** Our call for a provider call id (inbound calls get an id derived from it). */
export async function callForProvider(stack: Stack, firm: string, providerCallId: string): Promise<CallDoc> {
  return eventually(async () => {
    const call = await callsOf(stack).findOne({ firm, provider_call_id: providerCallId });
    expect(call).not.toBeNull();
    return call!;
  });
}

type EffectStates = Record<'lead' | 'crm' | 'email' | 'team_chat', string>;

/** Polls get-call until every effect has left `pending`; returns the call as the API shows it. */
export async function settledCall(
  client: { get(path: string): Promise<{ status: number; body: any }> },
  callId: string,
  timeoutMs = 30_000,
) {
  return eventually(
    async () => {
      const res = await client.get(`/api/v2/get-call/${callId}`);
      expect(res.status).toBe(200);
      const effects = res.body.effects as EffectStates;
      expect(Object.values(effects), JSON.stringify(effects)).not.toContain('pending');
      return res.body;
    },
    timeoutMs,
    100,
  );
}

/** Waits until the pipeline's queues have nothing waiting, delayed or running, and the webhook outbox nothing. */
export async function queuesIdle(stack: Stack, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () => {
      await expectOutboxEmpty(stack);
      for (const name of ['call-events', 'call-effects'] as const) {
        const counts = await stack.services.queues[name].getJobCounts(
          'waiting',
          'active',
          'delayed',
          'prioritized',
        );
        expect(
          Object.values(counts).reduce((a, b) => a + b, 0),
          name,
        ).toBe(0);
      }
    },
    timeoutMs,
    100,
  );
}

/** A stack with workers and the peers a call's effects reach: a real SMTP server (SMTP_URL), Clio and Slack. */
export interface PeerStack {
  smtp: FakeSmtp;
  clio: FakeClio;
  slack: FakeSlack;
  stack: Stack;
}

/** Starts the peers, then the stack mailing through that SMTP server; `env` adds to its environment. */
export async function startPeerStack(env: Record<string, string> = {}): Promise<PeerStack> {
  const [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  try {
    const stack = await startStack({ workers: true, env: { SMTP_URL: smtp.url, ...env } });
    return { smtp, clio, slack, stack };
  } catch (err) {
    await stopPeerStack({ smtp, clio, slack });
    throw err;
  }
}

/** Stops what `startPeerStack` started (any part of it, for an afterAll after a failed start). */
export async function stopPeerStack(peers: Partial<PeerStack>): Promise<void> {
  await peers.stack?.stop();
  await Promise.all([peers.smtp?.stop(), peers.clio?.close(), peers.slack?.close()]);
}
