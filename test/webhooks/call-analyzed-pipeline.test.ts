// The call_analyzed pipeline (docs/webhooks.md#the-effects) against real peers: a real SMTP server, local
// HTTP servers speaking Clio's and Slack's protocols, real Redis, FerretDB and workers. Each effect
// happens once per call however often and however concurrently the event is delivered, and a
// failing effect is retried alone.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { decodeHeader, type FakeSmtp } from '../fakes/smtp-server.js';
import type { ClioFailure, FakeClio } from '../fakes/clio-server.js';
import { RETRY_AFTER } from '../../jobs/backoff.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import {
  JANE,
  callForProvider,
  storedCall,
  leadsOf,
  postSigned,
  queuesIdle,
  retellCallAnalyzed,
  settledCall,
  startPeerStack,
  stopPeerStack,
  type Caller,
} from './support.js';

const SECRET = 'whsec_pipeline_test_secret';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({
    MAIL_FROM: 'Intake <intake@firm.test>',
    PUBLIC_BASE_URL: 'https://intake.example.com',
    // A failed effect is retried after 1 s, 2 s, ... (2 s, 4 s, ... by default).
    CALL_EFFECT_RETRY_MS: '1000',
  }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

/** A firm with every effect configured, each with its own Slack webhook URL and mailbox. */
async function configuredFirm() {
  const slackUrl = slack.webhookUrl();
  const inbox = `paralegal-${rand(3)}@firm.test`;
  const firm = await createFirm(stack, {
    voice_webhook_secret: SECRET,
    notification_emails: [inbox, 'intake-desk@firm.test'],
    slack_webhook_url: slackUrl,
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    timezone: 'America/Chicago',
  });
  return { ...firm, slackUrl, inbox };
}

type Firm = Awaited<ReturnType<typeof configuredFirm>>;

const mailsTo = (inbox: string) => smtp.messages.filter((m) => m.to.includes(inbox));
const contactsWithEmail = (email: string) =>
  clio.contacts.filter((c) => c.email_addresses.some((e) => e.address === email.toLowerCase()));
const mattersOf = (contactId: number) => clio.matters.filter((m) => m.client_id === contactId);

/** A caller of our own for one test, so the Clio fake's shared contacts never collide. */
const callerFor = (tag: string): Caller => ({ ...JANE, email: `${tag}.${rand(3)}@example.com` });

describe('the same call_analyzed delivered 10 times at once and 5 times later', () => {
  let firm: Firm;
  let caller: Caller;
  let callId: string;
  let body: ReturnType<typeof retellCallAnalyzed>;

  beforeAll(async () => {
    firm = await configuredFirm();
    caller = callerFor('jane');
    body = retellCallAnalyzed({ caller });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => postSigned(stack, firm.slug, SECRET, body)),
    );
    for (const res of answers) expect(res.body).toEqual({ received: true });
    callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    await settledCall(firm.client, callId);
  });

  it('gives one lead, one Clio Person and matter, one mail and one Slack message', async () => {
    const call = await settledCall(firm.client, callId);
    expect(call.effects).toEqual({ lead: 'done', crm: 'done', email: 'done', team_chat: 'done' });
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug })).toBe(1);
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    expect(mattersOf(contactsWithEmail(caller.email)[0]!.id)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });

  it('runs the four effects in the analysis job, with the call in hand: no job of their own when they succeed', async () => {
    const queue = stack.services.queues['call-effects'];
    for (const effect of ['lead', 'crm', 'email', 'team_chat']) {
      expect(await queue.getJob(`effect|${firm.slug}|${callId}|${effect}`), effect).toBeUndefined();
    }
    // The job completes a moment after its last effect is recorded (what settledCall saw).
    const analyses = await eventually(async () => {
      const found = (await queue.getJobs(['completed'])).filter(
        (j) => j.name === 'analyze-call' && j.data.callId === callId,
      );
      expect(found).toHaveLength(1);
      return found;
    });
    expect(analyses[0]!.returnvalue).toEqual({
      outcome: 'extracted',
      effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
    });
  });

  it('stays at one of each when delivered 5 more times after BullMQ has forgotten the first jobs', async () => {
    // Remove every finished job, so job ids no longer dedupe: only the pipeline's own records can.
    for (const name of ['call-events', 'call-effects'] as const) {
      await stack.services.queues[name].clean(0, 10_000, 'completed');
    }
    const ranBefore = (await stack.services.queues['call-events'].getJobCounts('completed')).completed ?? 0;
    expect(ranBefore).toBe(0);
    for (let i = 0; i < 5; i++) {
      expect((await postSigned(stack, firm.slug, SECRET, body)).body).toEqual({ received: true });
      await queuesIdle(stack);
    }
    // The later deliveries really ran through the pipeline again ...
    expect((await stack.services.queues['call-effects'].getJobCounts('completed')).completed).toBeGreaterThan(
      0,
    );
    // ... and found every effect done.
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug })).toBe(1);
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    expect(clio.matters.filter((m) => m.client_reference === callId)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    for (const name of ['lead', 'crm', 'email', 'team_chat'] as const) {
      expect(stored.effects?.[name]).toMatchObject({ state: 'done', attempts: 1 });
    }
  });

  it('keeps the effect records beside the call, not on it: no effect rewrites the call document', async () => {
    const db = stack.services.mongo.db;
    const onCall = await db
      .collection('calls')
      .findOne({ _id: callId as never }, { projection: { effects: 1, crm_sync: 1, lead_id: 1 } });
    expect(onCall).toEqual({ _id: callId });
    const records = await db.collection('call_effects').findOne({ _id: callId as never });
    expect(Object.keys(records?.effects ?? {}).sort()).toEqual(['crm', 'email', 'lead', 'team_chat']);
    expect(records?.crm_sync).toMatchObject({ contact: { state: 'done' }, matter: { state: 'done' } });
  });

  it('get-call shows the effects, the lead and the extracted caller data', async () => {
    const call = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
    expect(call).toMatchObject({
      direction: 'inbound',
      status: 'ended',
      from_number: '+14155550142',
      duration_ms: 185_000,
      effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
      lead_id: expect.stringMatching(/^lead_call_/),
      caller_data: {
        first_name: 'Jane',
        last_name: "O'Neil <b>",
        phone: '+14155550142',
        email: caller.email.toLowerCase(),
        case_type: 'Personal Injury',
        urgency: 'high',
        summary: caller.summary,
      },
    });
    const lead = await firm.client.get(`/api/leads/${call.lead_id}`);
    expect(lead.body).toMatchObject({
      id: call.lead_id,
      source: 'call',
      // The call as the API shows it: an inbound call under the provider's call id.
      call_id: body.call.call_id,
      chat_id: null,
      first_name: 'Jane',
      last_name: "O'Neil <b>",
      phone: '+14155550142',
      email: caller.email.toLowerCase(),
      case_type: 'Personal Injury',
      urgency: 'high',
      summary: caller.summary,
    });
  });

  it('writes a Person and a Pending matter to Clio with the firm’s token', async () => {
    const contact = contactsWithEmail(caller.email)[0]!;
    const create = clio
      .writes('/api/v4/contacts.json')
      .find((r) => r.body.data.email_addresses?.[0]?.address === caller.email.toLowerCase())!;
    expect(create.authorization).toBe(`Bearer ${clio.token}`);
    expect(create.body).toEqual({
      data: {
        type: 'Person',
        name: "Jane O'Neil <b>",
        first_name: 'Jane',
        last_name: "O'Neil <b>",
        email_addresses: [{ name: 'Other', address: caller.email.toLowerCase(), default_email: true }],
        phone_numbers: [{ name: 'Other', number: '+14155550142', default_number: true }],
      },
    });
    const matter = mattersOf(contact.id)[0]!;
    expect(matter).toMatchObject({ status: 'Pending', client_reference: callId });
    expect(matter.description).toContain('Personal Injury');
    expect(matter.description.length).toBeLessThanOrEqual(255);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.crm?.result).toMatchObject({
      contact_id: contact.id,
      matter_id: matter.id,
      contact_reused: false,
    });
  });

  it('mails a readable summary, plain text and escaped HTML, with a Message-ID derived from the call', async () => {
    const mail = mailsTo(firm.inbox)[0]!;
    expect(mail.to.sort()).toEqual([firm.inbox, 'intake-desk@firm.test'].sort());
    expect(mail.from).toBe('intake@firm.test');
    expect(mail.header('message-id')).toBe(`<call-notification.${callId}@intake.example.com>`);
    expect(decodeHeader(mail.header('subject')!)).toBe(
      "[High priority] New intake call: Jane O'Neil <b> — Personal Injury",
    );
    const raw = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    for (const text of [
      '+14155550142',
      caller.email.toLowerCase(),
      'Personal Injury',
      'High',
      `https://intake.example.com/api/v2/get-call/${body.call.call_id}`,
    ]) {
      expect(raw).toContain(text);
    }
    expect(raw).toContain('Content-Type: text/plain');
    expect(raw).toContain('Content-Type: text/html');
    // The HTML part never carries the caller's markup.
    const html = raw.slice(raw.indexOf('Content-Type: text/html'));
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('O&#39;Neil &lt;b&gt;');
  });

  it('posts a Slack message with the caller, the summary and a link to the call', async () => {
    const message = slack.messages(firm.slackUrl)[0]!.body;
    expect(message.text).toContain('New intake call');
    expect(message.text).toContain('&lt;script&gt;');
    expect(JSON.stringify(message.blocks)).toContain(
      `<https://intake.example.com/api/v2/get-call/${body.call.call_id}|Open the call record>`,
    );
    expect(JSON.stringify(message.blocks)).toContain('+14155550142');
  });
});

describe('a failing effect is retried alone', () => {
  it('Slack answering 500 twice then 200: one Slack message in the end, the email and the Clio contact not repeated', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('slack-retry');
    slack.failNext.push({ status: 500, url: firm.slackUrl }, { status: 500, url: firm.slackUrl });
    const body = retellCallAnalyzed({ caller });
    expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;

    // While Slack fails, the other effects are done and team_chat shows pending. Slack's next
    // answer is held meanwhile (its retry comes a second after the first 500), so a loaded
    // machine's look cannot come after the retry that succeeds.
    const slackAttempts = () => slack.attempts.filter((a) => a.path === new URL(firm.slackUrl).pathname);
    await eventually(async () => expect(slackAttempts().length).toBeGreaterThanOrEqual(1));
    slack.hold();
    let during: any;
    try {
      during = await eventually(async () => {
        const call = (await firm.client.get(`/api/v2/get-call/${callId}`)).body;
        expect(call.effects).toMatchObject({
          lead: 'done',
          crm: 'done',
          email: 'done',
          team_chat: 'pending',
        });
        return call;
      });
    } finally {
      slack.release();
    }
    expect(during.effects.team_chat).toBe('pending');

    const call = await settledCall(firm.client, callId);
    expect(call.effects.team_chat).toBe('done');
    const attempts = slack.attempts
      .filter((a) => a.path === new URL(firm.slackUrl).pathname)
      .map((a) => a.status);
    expect(attempts).toEqual([500, 500, 200]);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.team_chat).toMatchObject({ state: 'done', attempts: 3 });
    expect(stored.effects?.email).toMatchObject({ state: 'done', attempts: 1 });
    expect(stored.effects?.crm).toMatchObject({ state: 'done', attempts: 1 });
    // The analysis job tried Slack first and handed it to a job of its own, which retried it alone,
    // waiting CALL_EFFECT_RETRY_MS first, then doubling; the effects that succeeded have no job.
    const queue = stack.services.queues['call-effects'];
    // Completed a moment after it recorded the effect done (what settledCall saw).
    const retried = await eventually(async () => {
      const job = await queue.getJob(`effect|${firm.slug}|${callId}|team_chat`);
      expect(await job?.getState()).toBe('completed');
      return job;
    });
    expect(retried?.opts.delay).toBe(1000);
    expect(retried?.opts.backoff).toEqual({ type: RETRY_AFTER, delay: 1000 });
    for (const effect of ['lead', 'crm', 'email']) {
      expect(await queue.getJob(`effect|${firm.slug}|${callId}|${effect}`), effect).toBeUndefined();
    }
  });

  it('Clio answering 429 with Retry-After: 1: the contact is written after the wait, once', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('clio-429');
    clio.failNext.push({ status: 429, retryAfter: '1', method: 'POST', path: '/api/v4/contacts.json' });
    const body = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    const call = await settledCall(firm.client, callId);
    expect(call.effects.crm).toBe('done');

    const posts = clio
      .writes('/api/v4/contacts.json')
      .filter((r) => r.body.data.email_addresses?.[0]?.address === caller.email);
    expect(posts).toHaveLength(2); // the refused one and the one after the wait
    expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    // Waited out inside the attempt: not a job retry.
    const stored = (await storedCall(stack, callId))!;
    expect(stored.crm_sync?.contact).toMatchObject({ state: 'done', attempts: 1 });
    expect(stored.effects?.crm).toMatchObject({ state: 'done', attempts: 1 });
  });

  describe('Clio answering 429 with a Retry-After longer than an attempt waits (45 s)', () => {
    /** The effect's job, once it waits delayed with `attemptsMade` failed attempts, and when BullMQ runs it next. */
    async function nextAttempt(firm: Firm, callId: string, attemptsMade: number) {
      const queue = stack.services.queues['call-effects'];
      const id = `effect|${firm.slug}|${callId}|crm`;
      return eventually(async () => {
        const job = await queue.getJob(id);
        expect(await job?.getState()).toBe('delayed');
        expect(job!.attemptsMade).toBe(attemptsMade);
        // The delayed set's score: when it becomes due (ms) × 4096 + a counter.
        const score = await stack.services.redis.zscore(queue.keys.delayed!, id);
        return { job: job!, at: Math.floor(Number(score) / 0x1000) };
      }, 30_000);
    }
    /** When the fake answered the `nth` search for the caller's email (the failures it was told to give). */
    const searchedAt = (email: string, nth: number) =>
      clio.requests.filter(
        (r) => r.path === '/api/v4/contacts.json' && r.query.query?.toLowerCase() === email.toLowerCase(),
      )[nth]!.at;

    /** A call of a caller of its own, whose searches in Clio (by the email) get `failures`, in order. */
    async function deliver(firm: Firm, tag: string, failures: ClioFailure[]) {
      const caller = callerFor(tag);
      const left = [...failures];
      clio.injectFailure = (r) =>
        r.method === 'GET' &&
        r.path === '/api/v4/contacts.json' &&
        r.query.query?.toLowerCase() === caller.email.toLowerCase()
          ? left.shift()
          : undefined;
      const body = retellCallAnalyzed({ caller });
      await postSigned(stack, firm.slug, SECRET, body);
      const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
      return { callId, email: caller.email };
    }
    afterEach(() => {
      clio.injectFailure = undefined;
    });

    /** Not 45 s of this test: the wait is BullMQ's, seen above; promoted, the job writes the contact. */
    async function finish(firm: Firm, callId: string, email: string, job: { promote(): Promise<void> }) {
      await job.promote();
      expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
      expect(contactsWithEmail(email)).toHaveLength(1);
    }

    it('in the analysis job: the effect’s own job is first tried no sooner than 45 s after the 429', async () => {
      const firm = await configuredFirm();
      const { callId, email } = await deliver(firm, 'clio-429-45', [{ status: 429, retryAfter: '45' }]);
      const { job, at } = await nextAttempt(firm, callId, 0);
      expect(at - searchedAt(email, 0)).toBeGreaterThanOrEqual(45_000);
      expect(job.opts.delay).toBeGreaterThanOrEqual(45_000);
      await finish(firm, callId, email, job);
    });

    it('in the effect’s own job: its next attempt is no sooner than 45 s after the 429 (the backoff honours Retry-After)', async () => {
      const firm = await configuredFirm();
      // The analysis job meets a 500 and hands the effect to its job; that job's attempt the 429.
      const { callId, email } = await deliver(firm, 'clio-429-45-job', [
        { status: 500 },
        { status: 429, retryAfter: '45' },
      ]);
      const { job, at } = await nextAttempt(firm, callId, 1);
      expect(job.failedReason).toMatch(/429.*Retry-After 45 s/);
      expect(at - searchedAt(email, 1)).toBeGreaterThanOrEqual(45_000);
      expect(job.delay).toBeGreaterThanOrEqual(45_000);
      await finish(firm, callId, email, job);
    });
  });

  it('Slack answering 429 with Retry-After: 1: the message is posted after the wait, once, in the same attempt', async () => {
    const firm = await configuredFirm();
    slack.failNext.push({ status: 429, retryAfter: '1', url: firm.slackUrl });
    const body = retellCallAnalyzed({ caller: callerFor('slack-429') });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    expect((await settledCall(firm.client, callId)).effects.team_chat).toBe('done');
    const attempts = slack.attempts.filter((a) => a.path === new URL(firm.slackUrl).pathname);
    expect(attempts.map((a) => a.status)).toEqual([429, 200]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.team_chat).toMatchObject({ state: 'done', attempts: 1 });
  });

  it('a Clio token that is refused (401) is retried, not given up: the firm fixes its token and the sync completes', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('clio-401');
    expect(
      (
        await firm.client.patch(`/api/firms/${firm.slug}`, {
          settings: { crm: { provider: 'clio', access_token: 'expired-token', base_url: clio.url } },
        })
      ).status,
    ).toBe(200);
    const body = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    await eventually(async () => {
      const stored = (await storedCall(stack, callId))!;
      expect(stored.crm_sync?.contact?.last_error).toMatch(/401/);
      expect(stored.effects?.email?.state).toBe('done');
    });
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.effects.crm).toBe('pending');
    expect(
      (
        await firm.client.patch(`/api/firms/${firm.slug}`, {
          settings: { crm: { provider: 'clio', access_token: clio.token, base_url: clio.url } },
        })
      ).status,
    ).toBe(200);
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    expect(clio.requests.some((r) => r.authorization === 'Bearer expired-token')).toBe(true);
  });

  it('a Clio contact created but answered with 500 is found again, not created twice', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('clio-lost-answer');
    clio.failNext.push({ status: 500, method: 'POST', path: '/api/v4/contacts.json', afterWrite: true });
    const body = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
    expect(contactsWithEmail(caller.email)).toHaveLength(1);
    const contact = contactsWithEmail(caller.email)[0]!;
    expect(mattersOf(contact.id)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.crm_sync?.contact).toMatchObject({
      state: 'done',
      attempts: 1,
      last_error: expect.stringContaining('500'),
      result: { contact_id: contact.id },
    });
    expect(
      clio
        .writes('/api/v4/contacts.json')
        .filter((r) => r.body.data.email_addresses?.[0]?.address === caller.email),
    ).toHaveLength(1);
    expect(stored.crm_sync?.matter).toMatchObject({ state: 'done', attempts: 1 });
  });

  it('a Clio matter created but answered with 500 is found by its reference; the contact is not touched again', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('clio-matter-lost');
    clio.failNext.push({ status: 500, method: 'POST', path: '/api/v4/matters.json', afterWrite: true });
    const body = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
    const contact = contactsWithEmail(caller.email)[0]!;
    expect(
      clio
        .writes('/api/v4/contacts.json')
        .filter((r) => r.body.data.email_addresses?.[0]?.address === caller.email),
    ).toHaveLength(1);
    expect(mattersOf(contact.id)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.crm_sync?.contact).toMatchObject({ state: 'done', attempts: 1 });
    // The second attempt asked Clio first (by our reference) and wrote nothing.
    expect(
      clio.writes('/api/v4/matters.json').filter((r) => r.body.data.client.id === contact.id),
    ).toHaveLength(1);
    expect(stored.crm_sync?.matter).toMatchObject({
      state: 'done',
      attempts: 1,
      last_error: expect.stringContaining('500'),
      result: { matter_id: mattersOf(contact.id)[0]!.id },
    });
  });

  it('reuses an existing Clio contact with the same email', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('existing');
    clio.contacts.push({
      id: 7,
      type: 'Person',
      first_name: 'Jane',
      last_name: 'Existing',
      name: 'Jane Existing',
      email_addresses: [{ name: 'Work', address: caller.email.toUpperCase(), primary: true }],
      phone_numbers: [],
    });
    const body = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    expect((await settledCall(firm.client, callId)).effects.crm).toBe('done');
    expect(
      clio
        .writes('/api/v4/contacts.json')
        .filter((r) => r.body.data.email_addresses?.[0]?.address === caller.email),
    ).toEqual([]);
    expect(mattersOf(7)).toHaveLength(1);
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.crm?.result).toMatchObject({ contact_id: 7, contact_reused: true });
  });

  it('a Slack webhook that is gone (404 no_service) fails for good at once; the other effects are done', async () => {
    const firm = await configuredFirm();
    slack.failNext.push({ status: 404, url: firm.slackUrl });
    const body = retellCallAnalyzed({ caller: callerFor('slack-gone') });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    const call = await settledCall(firm.client, callId);
    expect(call.effects).toEqual({ lead: 'done', crm: 'done', email: 'done', team_chat: 'failed' });
    const stored = (await storedCall(stack, callId))!;
    expect(stored.effects?.team_chat).toMatchObject({
      state: 'failed',
      attempts: 1,
      last_error: expect.stringContaining('404'),
    });
    // Refused for good in the analysis job: no job of its own retries it, and the analysis says so.
    const queue = stack.services.queues['call-effects'];
    expect(await queue.getJob(`effect|${firm.slug}|${callId}|team_chat`)).toBeUndefined();
    // The job completes a moment after its last effect is recorded (what settledCall saw).
    const analysis = await eventually(async () => {
      const [found] = (await queue.getJobs(['completed'])).filter(
        (j) => j.name === 'analyze-call' && j.data.callId === callId,
      );
      expect(found).toBeDefined();
      return found!;
    });
    expect(analysis.returnvalue.effects).toEqual({
      lead: 'done',
      crm: 'done',
      email: 'done',
      team_chat: 'failed',
    });
  });
});

describe('ordering', () => {
  it('call_analyzed before call_ended: the call ends once, the effects run once, the late call_ended changes nothing', async () => {
    const firm = await configuredFirm();
    const caller = callerFor('early');
    const analyzed = retellCallAnalyzed({ caller });
    await postSigned(stack, firm.slug, SECRET, analyzed);
    const callId = (await callForProvider(stack, firm.slug, analyzed.call.call_id))._id;
    const settled = await settledCall(firm.client, callId);
    expect(settled).toMatchObject({
      status: 'ended',
      effects: { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' },
    });

    const { call_analysis: _analysis, ...ended } = analyzed.call;
    await postSigned(stack, firm.slug, SECRET, { event: 'call_ended', call: ended });
    await postSigned(stack, firm.slug, SECRET, {
      event: 'call_started',
      call: { ...ended, call_status: 'ongoing' },
    });
    await queuesIdle(stack);
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body).toEqual(settled);
    expect(mailsTo(firm.inbox)).toHaveLength(1);
    expect(slack.messages(firm.slackUrl)).toHaveLength(1);
  });

  it('a call that did not connect: every effect skipped, no lead, nothing sent', async () => {
    const firm = await configuredFirm();
    const body = retellCallAnalyzed({ caller: callerFor('no-answer'), callStatus: 'not_connected' });
    await postSigned(stack, firm.slug, SECRET, body);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    const call = await settledCall(firm.client, callId);
    expect(call.status).toBe('not_connected');
    expect(call.effects).toEqual({ lead: 'skipped', crm: 'skipped', email: 'skipped', team_chat: 'skipped' });
    expect(call.lead_id).toBeNull();
    expect(await leadsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
    expect(mailsTo(firm.inbox)).toHaveLength(0);
    expect(slack.messages(firm.slackUrl)).toHaveLength(0);
  });
});
