// MongoDB unreachable, Redis up: a correctly authenticated webhook delivery is still taken into its
// queue with a 200 (only with both stores down is the answer 503), and applied once MongoDB is
// back. The firm's keys come from their sealed copy in Redis (core/domain/firms/webhook-keys.ts),
// which follows a PATCH of the keys; the firm is one this web process has not read since (the
// PATCH cleared its read cache), and no delivery came before the outage. The firm's API key, used
// once before, is still answered by the read cache (core/platform/db/read-cache.ts). A delivery
// signed with the platform's RETELL_API_KEY is taken too, and the worker checks whose call it is
// before applying it (core/domain/calls/call-owner.ts): another firm's call is dropped.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import {
  copiedWebhookKeys,
  publishEveryFirmsWebhookKeys,
  publishWebhookKeys,
} from '../../core/domain/firms/webhook-keys.js';
import { calBooking, calEvent, postSigned, reminders, uid } from '../bookings/support.js';
import { expectError } from '../helpers/expect-error.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';

const OLD_VOICE = `whsec_old_${rand(6)}`;
const VOICE = `whsec_new_${rand(6)}`;
const BOOKING = `calsec_${rand(6)}`;
const RETELL_API_KEY = `key_outage_${rand(6)}`;
/** The firm's line: an inbound call to it is the firm's (core/domain/calls/call-owner.ts). */
const FIRM_LINE = `+1415555${String(1000 + Math.floor(Math.random() * 8999))}`;
const OTHER_AGENT = `agent_${rand(6)}`;

let relay: TcpRelay;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  // The service reaches MongoDB through a relay this test can cut.
  relay = await startTcpRelay(new URL(inject('mongodbUri')));
  stack = await startStack({
    env: { MONGODB_URI: relay.via(freshMongoUri()), RETELL_API_KEY },
    workers: true,
  });
  firm = await createFirm(stack, {
    voice_webhook_secret: OLD_VOICE,
    booking_webhook_secret: BOOKING,
    from_number: FIRM_LINE,
  });
  // Another firm, whose agent's calls a delivery to `firm` signed with the platform key is not for.
  const other = await createFirm(stack);
  const agent = await stack.admin.post('/api/v2/create-agent', {
    firmSlug: other.slug,
    agent_name: 'Intake',
    voice_id: 'sim-en-us-ava',
    provider_agent_id: OTHER_AGENT,
  });
  expect(agent.status, JSON.stringify(agent.body)).toBe(200);
  const patched = await firm.client.patch(`/api/firms/${firm.slug}`, {
    settings: { voice_webhook_secret: VOICE },
  });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  // The firm's API key in use (asking for calls it does not have): the web has read the key, not
  // the firm. (The first request after the PATCH reads it before it learns the new change epoch,
  // so it is not kept; the second's is.)
  for (let i = 0; i < 2; i++) {
    expectError(await firm.client.get(`/api/v2/get-call/call_${rand()}`), 404, 'call_not_found');
  }
});

afterAll(async () => {
  await relay?.close();
  relay = await startTcpRelay(new URL(inject('mongodbUri')), relay.port);
  await stack?.stop();
  await relay.close();
});

function callWebhook(slug: string, body: unknown, secret: string) {
  const raw = JSON.stringify(body);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, secret) },
  });
}

const started = (callId: string, more: Record<string, unknown> = {}) => ({
  event: 'call_started',
  call: {
    call_id: callId,
    call_status: 'ongoing',
    direction: 'inbound',
    from_number: '+14155550123',
    ...more,
  },
});

/** The call-events job of a call_started delivery to `slug`. */
const startedJob = (slug: string, callId: string) =>
  stack.services.queues['call-events'].getJob(
    JOBS.callEvent.id!({ firm: slug, event: 'call_started', call: { call_id: callId }, received_at: 0 }),
  );

describe('webhooks while MongoDB is unreachable', () => {
  it('the firm’s keys are copied to Redis sealed, never in the clear', async () => {
    const copy = await stack.services.redis.hgetall(redisKeys(stack.config).firmWebhookKeys(firm.slug));
    expect(Object.keys(copy).sort()).toEqual(['value', 'version']);
    expect(copy.value).not.toContain(VOICE);
    expect(copy.value).not.toContain(BOOKING);
    expect(JSON.parse(copy.value!).keys).toEqual({
      voice_webhook_secret: expect.objectContaining({ sealed: 'aes-256-gcm' }),
      booking_webhook_secret: expect.objectContaining({ sealed: 'aes-256-gcm' }),
    });
  });

  it('signed call and booking deliveries get 200 and are applied when MongoDB is back; wrong keys get 401', async () => {
    await relay.close();
    await eventually(async () => {
      const ready = await stack.admin.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error.details).toEqual([{ path: '/mongodb', message: expect.any(String) }]);
    }, 30_000);

    const signedCall = `call_${rand()}`;
    const bearerCall = `call_${rand()}`;
    const res = await callWebhook(firm.slug, started(signedCall), VOICE);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ received: true });
    // The key the PATCH replaced is not taken from the copy.
    expectError(await callWebhook(firm.slug, started(`call_${rand()}`), OLD_VOICE), 401, 'unauthorized');
    // A firm with no copy is answered as an unknown one (an outage enumerates no slugs).
    expectError(
      await callWebhook(`no-firm-${rand(3)}`, started(`call_${rand()}`), VOICE),
      401,
      'unauthorized',
    );
    // The platform key: the copy stands for the firm.
    const bearer = await stack.admin.post(`/api/v2/${firm.slug}/webhook`, started(bearerCall));
    expect(bearer.status, JSON.stringify(bearer.body)).toBe(200);
    // The firm's API key, read before the outage: the read cache still answers for it.
    const keyCall = `call_${rand()}`;
    const byKey = await firm.client.post(`/api/v2/${firm.slug}/webhook`, started(keyCall));
    expect(byKey.status, JSON.stringify(byKey.body)).toBe(200);
    expectError(
      await stack.admin.post(`/api/v2/no-firm-${rand(3)}/webhook`, started(bearerCall)),
      503,
      'unavailable',
    );

    const bookingUid = uid();
    const booking = calBooking(bookingUid, Date.now() + 3 * 24 * 3600_000, [
      { email: 'jane@example.com', name: 'Jane Doe', timeZone: 'America/New_York' },
    ]);
    const signedBooking = await postSigned(stack, firm.slug, calEvent('BOOKING_CREATED', booking), BOOKING);
    expect(signedBooking.status, JSON.stringify(signedBooking.body)).toBe(200);
    expectError(
      await postSigned(stack, firm.slug, calEvent('BOOKING_CREATED', booking), 'not-the-secret'),
      401,
      'unauthorized',
    );

    // Signed with the platform's key: whose call it is cannot be read now, so the worker checks.
    const sharedCall = `call_${rand()}`;
    const notOurs = `call_${rand()}`;
    const toFirm = await callWebhook(
      firm.slug,
      started(sharedCall, { to_number: FIRM_LINE }),
      RETELL_API_KEY,
    );
    expect(toFirm.status, JSON.stringify(toFirm.body)).toBe(200);
    const othersCall = started(notOurs, { to_number: '+14155550999', agent_id: OTHER_AGENT });
    const toOther = await callWebhook(firm.slug, othersCall, RETELL_API_KEY);
    expect(toOther.status, JSON.stringify(toOther.body)).toBe(200);
    for (const callId of [sharedCall, notOurs]) {
      expect((await startedJob(firm.slug, callId))?.data.owner_unchecked).toBe(true);
    }
    expect((await startedJob(firm.slug, signedCall))?.data.owner_unchecked).toBeUndefined();

    // Nothing is applied while MongoDB is away; everything is once it is back.
    relay = await startTcpRelay(new URL(inject('mongodbUri')), relay.port);
    await eventually(async () => {
      expect((await startedJob(firm.slug, notOurs))?.returnvalue).toEqual({ dropped: 'not_the_firms_call' });
    }, 60_000);
    expectError(await firm.client.get(`/api/v2/get-call/${notOurs}`), 404, 'call_not_found');
    expect(
      await stack.services.mongo.db.collection('calls').countDocuments({ provider_call_id: notOurs }),
    ).toBe(0);
    for (const callId of [signedCall, bearerCall, keyCall, sharedCall]) {
      await eventually(async () => {
        const call = await firm.client.get(`/api/v2/get-call/${callId}`);
        expect(call.status, JSON.stringify(call.body)).toBe(200);
        expect(call.body.call_status ?? call.body.status).toBe('ongoing');
      }, 60_000);
    }
    await eventually(async () => {
      const rows = await reminders(firm.client, firm.slug, bookingUid);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((r) => r.booking_uid === bookingUid && r.status === 'scheduled')).toBe(true);
    }, 60_000);
  }, 180_000);

  it('Redis reconnecting while MongoDB is away: deliveries are still queued (200), not refused', async () => {
    await relay.close();
    await eventually(async () => expect((await stack.admin.get('/readyz')).status).toBe(503), 30_000);
    // The web's Redis connection drops and comes back: its outbox gate must look at MongoDB again,
    // which cannot answer.
    const redis = stack.services.redis;
    const back = new Promise<void>((resolve) => redis.once('ready', () => resolve()));
    redis.disconnect(true);
    await back;
    const callId = `call_${rand()}`;
    let answers: number[];
    try {
      // The first right away (the gate's look at MongoDB may still be under way or just failed),
      // then two more.
      answers = [];
      for (let i = 0; i < 3; i++) {
        const res = await callWebhook(firm.slug, started(i === 0 ? callId : `call_${rand()}`), VOICE);
        answers.push(res.status);
      }
    } finally {
      relay = await startTcpRelay(new URL(inject('mongodbUri')), relay.port);
    }
    expect(answers).toEqual([200, 200, 200]);
    await eventually(async () => {
      const call = await firm.client.get(`/api/v2/get-call/${callId}`);
      expect(call.status, JSON.stringify(call.body)).toBe(200);
    }, 60_000);
  }, 120_000);

  it('a copy from an older version of the firm never replaces a newer one', async () => {
    const current = (await getFirm(stack.services.mongo.db, firm.slug))!;
    await publishWebhookKeys(stack.services, {
      ...current,
      settings: { ...current.settings, voice_webhook_secret: OLD_VOICE },
      updated_at: new Date(current.updated_at.getTime() - 1),
    });
    expect((await copiedWebhookKeys(stack.services, firm.slug))?.voice_webhook_secret).toBe(VOICE);
  });

  it('a PATCH refused before its write (400) leaves the copy as it was', async () => {
    const refused = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { voice_webhook_secret: OLD_VOICE, slack_webhook_url: 'http://169.254.169.254/hook' },
    });
    expectError(refused, 400, 'url_not_allowed');
    expect(await copiedWebhookKeys(stack.services, firm.slug)).toEqual({
      firm: firm.slug,
      voice_webhook_secret: VOICE,
      booking_webhook_secret: BOOKING,
    });
  });

  it('a lost copy is written again by the next delivery’s read, and by the hourly job for every firm', async () => {
    const copyKey = redisKeys(stack.config).firmWebhookKeys(firm.slug);
    const other = await createFirm(stack, { voice_webhook_secret: OLD_VOICE });
    const otherKey = redisKeys(stack.config).firmWebhookKeys(other.slug);
    await stack.services.redis.del(copyKey, otherKey);

    expect((await callWebhook(firm.slug, started(`call_${rand()}`), VOICE)).status).toBe(200);
    await eventually(async () => {
      expect((await copiedWebhookKeys(stack.services, firm.slug))?.voice_webhook_secret).toBe(VOICE);
    });
    expect(await stack.services.redis.exists(otherKey)).toBe(0);

    // The maintenance job, as its scheduler adds it, run by the stack's worker.
    await stack.services.redis.del(copyKey);
    await enqueue(stack.services.queues, JOBS.copyWebhookKeys, {});
    await eventually(async () => {
      expect(await copiedWebhookKeys(stack.services, firm.slug)).toEqual({
        firm: firm.slug,
        voice_webhook_secret: VOICE,
        booking_webhook_secret: BOOKING,
      });
      expect((await copiedWebhookKeys(stack.services, other.slug))?.voice_webhook_secret).toBe(OLD_VOICE);
    });
    // This store's three firms: `firm`, the other agent's and `other`.
    expect(await publishEveryFirmsWebhookKeys(stack.services)).toBe(3);
  });
});
