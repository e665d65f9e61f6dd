// End to end with the built-in simulator (VOICE_PROVIDER=simulator, the default): one
// create-outbound-call, and the simulator's signed webhooks carry the call through the whole
// call_analyzed pipeline — a lead, a Clio contact and matter, a mail and a Slack message —
// without any further request from the test (it only watches the peers and the database).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import type { FakeSmtp } from '../fakes/smtp-server.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import { createAgent } from '../calls/support.js';
import { callsOf, leadsOf, startPeerStack, stopPeerStack } from './support.js';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({ SIM_CALL_MS: '200' }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

describe('a simulated call', () => {
  it('flows from create-outbound-call to a lead, a Clio contact and matter, a mail and a Slack message', async () => {
    expect(stack.config.voiceProvider).toBe('simulator');
    const slackUrl = slack.webhookUrl();
    const firm = await createFirm(stack, {
      notification_emails: ['intake@lopez-law.test'],
      slack_webhook_url: slackUrl,
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    const agentId = await createAgent(firm.client, firm.slug);
    const created = await firm.client.post('/api/v2/create-outbound-call', {
      toNumber: '+14155550123',
      agentId,
      firmSlug: firm.slug,
      dynamicVariables: {
        full_name: 'Maria Lopez',
        case_type: 'workers compensation',
        email: 'maria.lopez@example.com',
      },
    });
    expect(created.status).toBe(200);
    const callId = created.body.call_id as string;

    // Only watching from here: the peers and the database.
    await eventually(
      async () => {
        expect(smtp.messages.filter((m) => m.to.includes('intake@lopez-law.test'))).toHaveLength(1);
        expect(slack.messages(slackUrl)).toHaveLength(1);
        expect(clio.matters.filter((m) => m.client_reference === callId)).toHaveLength(1);
        expect(await leadsOf(stack).countDocuments({ firm: firm.slug, call_id: callId })).toBe(1);
      },
      30_000,
      100,
    );

    // Each effect is recorded done just after the peer has it: wait for the records too.
    const call = await eventually(async () => {
      const read = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
      expect(read.effects).toEqual({ lead: 'done', crm: 'done', email: 'done', team_chat: 'done' });
      return read;
    });
    expect(call).toMatchObject({
      status: 'ended',
      effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
      caller_data: {
        first_name: 'Maria',
        last_name: 'Lopez',
        phone: '+14155550123',
        email: 'maria.lopez@example.com',
        case_type: 'workers compensation',
      },
    });
    const lead = (await leadsOf(stack).findOne({ _id: call.lead_id }))!;
    expect(lead).toMatchObject({
      source: 'call',
      call_id: callId,
      first_name: 'Maria',
      last_name: 'Lopez',
      phone: '+14155550123',
      email: 'maria.lopez@example.com',
    });
    const contact = clio.contacts.find((c) => c.email_addresses[0]?.address === 'maria.lopez@example.com')!;
    expect(contact).toMatchObject({ type: 'Person', first_name: 'Maria', last_name: 'Lopez' });
    expect(clio.matters.find((m) => m.client_reference === callId)!.client_id).toBe(contact.id);
    const mail = smtp.messages.find((m) => m.to.includes('intake@lopez-law.test'))!;
    expect(mail.raw).toContain(`/api/v2/get-call/${callId}`);
    expect(JSON.stringify(slack.messages(slackUrl)[0]!.body)).toContain('Maria Lopez');
    // The webhooks were the simulator's, signed; the test sent none.
    const stored = (await callsOf(stack).findOne({ _id: callId }))!;
    expect(stored.provider_call_id).toMatch(/^sim_/);
  });
});
