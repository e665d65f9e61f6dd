// Which effects run depends on the firm's settings and the service's configuration: an
// unconfigured effect is recorded `skipped` with its reason; the URL policy is applied again
// when a firm's Slack or Clio URL is called; and the webhook answers while an effect hangs.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { changeCached } from '../../core/platform/db/read-cache.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import {
  JANE,
  callForProvider,
  storedCall,
  leadsOf,
  postSigned,
  retellCallAnalyzed,
  settledCall,
} from './support.js';

const SECRET = 'whsec_effects_configuration';
const stacks: Stack[] = [];
let clio: FakeClio;
let slack: FakeSlack;

beforeAll(async () => {
  [clio, slack] = await Promise.all([startFakeClio(), startFakeSlack()]);
});
afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
  await Promise.all([clio?.close(), slack?.close()]);
});

async function stackWith(env: Record<string, string>): Promise<Stack> {
  const stack = await startStack({ workers: true, env });
  stacks.push(stack);
  return stack;
}

async function deliver(stack: Stack, slug: string, body = retellCallAnalyzed()) {
  expect((await postSigned(stack, slug, SECRET, body)).status).toBe(200);
  return (await callForProvider(stack, slug, body.call.call_id))._id;
}

const reasonOf = async (stack: Stack, callId: string, effect: 'lead' | 'crm' | 'email' | 'team_chat') =>
  (await storedCall(stack, callId))?.effects?.[effect]?.result?.reason;

describe('unconfigured effects are skipped', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await stackWith({}); // no SMTP_URL
  });

  it('a firm with no CRM, no notification_emails and no Slack: the lead is created, the rest skipped', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    const callId = await deliver(stack, firm.slug);
    const call = await settledCall(firm.client, callId);
    expect(call.effects).toEqual({ lead: 'done', crm: 'skipped', email: 'skipped', team_chat: 'skipped' });
    expect(await reasonOf(stack, callId, 'crm')).toMatch(/settings\.crm/);
    expect(await reasonOf(stack, callId, 'email')).toMatch(/SMTP_URL/);
    expect(await reasonOf(stack, callId, 'team_chat')).toMatch(/slack_webhook_url/);
    // The lead names the call as the API shows it (an inbound call: by the provider's call id).
    const shownId = (await storedCall(stack, callId))!.call_id;
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug, call_id: shownId })).toBe(1);
  });

  it('notification_emails without a mail server (no SMTP_URL): the email is skipped', async () => {
    const firm = await createFirm(stack, {
      voice_webhook_secret: SECRET,
      notification_emails: ['desk@firm.test'],
    });
    const callId = await deliver(stack, firm.slug);
    expect((await settledCall(firm.client, callId)).effects.email).toBe('skipped');
    expect(await reasonOf(stack, callId, 'email')).toMatch(/SMTP_URL/);
  });

  it('crm provider "none" is skipped like no CRM', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET, crm: { provider: 'none' } });
    const callId = await deliver(stack, firm.slug);
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('skipped');
  });

  it('a call where no phone or email was collected: no lead and no CRM contact', async () => {
    const firm = await createFirm(stack, {
      voice_webhook_secret: SECRET,
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    const body = retellCallAnalyzed();
    const call = {
      ...body.call,
      from_number: 'anonymous',
      transcript: 'Agent: How can we help?\nUser: I just have a general question about fees.\n',
      call_analysis: { call_summary: 'A general question about fees.', custom_analysis_data: {} },
    };
    const callId = await deliver(stack, firm.slug, { ...body, call });
    const shown = await settledCall(firm.client, callId);
    expect(shown.effects).toMatchObject({ lead: 'skipped', crm: 'skipped' });
    expect(shown.caller_data).toMatchObject({
      phone: null,
      email: null,
      summary: 'A general question about fees.',
    });
    expect(await reasonOf(stack, callId, 'lead')).toMatch(/No phone number or email/);
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
    expect(clio.requests.filter((r) => r.method === 'POST')).toEqual([]);
  });
});

describe('the URL policy is applied when a firm URL is called', () => {
  it('without ALLOW_PRIVATE_URLS, a loopback Slack or Clio URL that got into the settings is never called', async () => {
    const stack = await stackWith({ ALLOW_PRIVATE_URLS: 'false', CLIO_BASE_URL: clio.url });
    const firm = await createFirm(stack, {
      voice_webhook_secret: SECRET,
      crm: { provider: 'clio', access_token: clio.token },
    });
    // Stored before the policy was tightened (the store-time check would refuse it now): around
    // the API, through changeCached, as every writer (the workers cache firms).
    const slackUrl = slack.webhookUrl();
    const db = stack.services.mongo.db;
    await changeCached(db, () =>
      db
        .collection(COLLECTIONS.firms)
        .updateOne({ _id: firm.slug as never }, { $set: { 'settings.slack_webhook_url': slackUrl } }),
    );
    const before = clio.requests.length;
    const callId = await deliver(stack, firm.slug);
    const call = await settledCall(firm.client, callId);
    expect(call.effects).toMatchObject({ lead: 'done', crm: 'failed', team_chat: 'failed' });
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.crm?.last_error).toMatch(/not allowed/);
    expect(stored.effects?.team_chat?.last_error).toMatch(/not allowed/);
    expect(stored.effects?.team_chat?.attempts).toBe(1);
    expect(clio.requests.length).toBe(before);
    expect(slack.attempts.filter((a) => slackUrl.endsWith(a.path))).toEqual([]);
  });
});

describe('effects never hold up the webhook', () => {
  it('while Slack hangs, deliveries are still answered and the other effects finish', async () => {
    const held: ServerResponse[] = [];
    const hanging = createServer((req, res) => {
      req.resume();
      held.push(res); // never answered until the end of the test
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/services/T1/B1/hang`;
    try {
      const stack = await stackWith({});
      const firm = await createFirm(stack, { voice_webhook_secret: SECRET, slack_webhook_url: url });
      const first = await deliver(stack, firm.slug);
      await eventually(async () => expect(held.length).toBe(1));
      // Slack holds the first call's message; new deliveries are answered all the same.
      const second = retellCallAnalyzed({ caller: { ...JANE, email: 'second@example.com' } });
      expect((await postSigned(stack, firm.slug, SECRET, second)).body).toEqual({ received: true });
      const secondId = (await callForProvider(stack, firm.slug, second.call.call_id))._id;
      await eventually(async () => {
        const call = (await firm.client.get(`/api/v2/get-call/${secondId}`)).body;
        expect(call.effects).toMatchObject({ lead: 'done', team_chat: 'pending' });
      });
      expect((await firm.client.get(`/api/v2/get-call/${first}`)).body.effects.team_chat).toBe('pending');
    } finally {
      for (const res of held) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      const release = setInterval(() => {
        for (const res of held) if (!res.writableEnded) res.writeHead(200).end('ok');
      }, 50);
      await eventually(async () => expect(held.every((r) => r.writableEnded)).toBe(true)).finally(() =>
        clearInterval(release),
      );
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  });
});
