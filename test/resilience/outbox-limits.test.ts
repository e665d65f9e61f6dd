// While Redis is down the webhook receivers keep deliveries in the MongoDB outbox
// (docs/webhooks.md#redis-outages). That outbox had no limits: a tenant wrote 150 entries
// (31.5 MB) in 5.3 s, 700 forgeries all got 401 and never 429, replays were kept again, and the
// public /readyz said which store was down. Here with a private Redis stopped: the per-firm and
// per-address limits hold in each process's memory, a delivery is kept once, the outbox's size is
// capped (503 with Retry-After past it), and only the platform key sees /readyz's detail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { OutboxEntry } from '../../core/domain/deliveries/delivery-outbox.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { SAMPLE_CALLER, callWebhook, conversationCall } from '../fakes/retell-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

const SECRET = 'whsec_outbox_limits_secret';
const PER_FIRM_PER_MINUTE = 20;
const FORGERIES_PER_MINUTE = 10;
const FIRM_BYTES = 200_000;
const TOTAL_BYTES = 600_000;

let redis: PrivateRedis;
let stack: Stack;

beforeAll(async () => {
  redis = await startPrivateRedis();
  stack = await startStack({
    env: {
      REDIS_URL: redis.url,
      TRUST_PROXY: 'true',
      WEBHOOK_RATE_LIMIT_PER_MINUTE: String(PER_FIRM_PER_MINUTE),
      UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: String(FORGERIES_PER_MINUTE),
      WEBHOOK_OUTBOX_MAX_BYTES_PER_FIRM: String(FIRM_BYTES),
      WEBHOOK_OUTBOX_MAX_BYTES: String(TOTAL_BYTES),
    },
  });
  await redis.stop();
  await eventually(async () => expect(stack.services.redis.status).not.toBe('ready'));
});
afterAll(async () => {
  await stack?.stop();
  await redis?.remove();
});

const caller = SAMPLE_CALLER;

/** A call_ended of a fresh call (its transcript `transcriptChars` long when given). */
function callEnded(transcriptChars?: number) {
  const call = conversationCall(caller, { callId: `call_${rand(8)}`, direction: 'inbound' });
  if (transcriptChars !== undefined) call.transcript = 'x'.repeat(transcriptChars);
  return callWebhook('call_ended', call);
}

/** POSTs a delivery signed with `secret`, from client address `address`. */
function deliver(slug: string, body: unknown, address: string, secret = SECRET) {
  const raw = JSON.stringify(body);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'x-retell-signature': signRetellWebhook(raw, secret),
      'X-Forwarded-For': address,
    },
  });
}

const outbox = () => stack.services.mongo.db.collection<OutboxEntry>(COLLECTIONS.webhookOutbox);
const keptFor = (firm: string) => outbox().countDocuments({ firm });

describe('the outbox while Redis is down', () => {
  it('forged deliveries from one address: 401 up to the limit, then 429 (kept in memory)', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    const statuses: number[] = [];
    for (let i = 0; i < FORGERIES_PER_MINUTE * 3; i++) {
      statuses.push((await deliver(firm.slug, callEnded(), '198.51.100.66', 'whsec_forged')).status);
    }
    expect(statuses.slice(0, FORGERIES_PER_MINUTE)).toEqual(Array(FORGERIES_PER_MINUTE).fill(401));
    expect(new Set(statuses.slice(FORGERIES_PER_MINUTE))).toEqual(new Set([429]));
    expect(await keptFor(firm.slug)).toBe(0);
  });

  it("one firm past its webhook limit gets 429 and is not kept; another firm's deliveries are", async () => {
    const flood = await createFirm(stack, { voice_webhook_secret: SECRET });
    const other = await createFirm(stack, { voice_webhook_secret: SECRET });
    const statuses: number[] = [];
    for (let i = 0; i < PER_FIRM_PER_MINUTE * 2; i++) {
      statuses.push((await deliver(flood.slug, callEnded(), '192.0.2.1')).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(PER_FIRM_PER_MINUTE);
    const refused = await deliver(flood.slug, callEnded(), '192.0.2.1');
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await keptFor(flood.slug)).toBe(PER_FIRM_PER_MINUTE);
    expect((await deliver(other.slug, callEnded(), '192.0.2.1')).status).toBe(200);
    expect(await keptFor(other.slug)).toBe(1);
  });

  it('a delivery sent again is acknowledged and kept once', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    const body = callEnded();
    for (let i = 0; i < 5; i++) {
      const res = await deliver(firm.slug, body, '192.0.2.2');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    expect(await keptFor(firm.slug)).toBe(1);
  });

  it("the outbox's size is capped per firm and in all: past it 503 with Retry-After", async () => {
    const big = await createFirm(stack, { voice_webhook_secret: SECRET });
    const answers: number[] = [];
    for (let i = 0; i < 10; i++)
      answers.push((await deliver(big.slug, callEnded(40_000), '192.0.2.3')).status);
    const kept = answers.filter((s) => s === 200).length;
    expect(kept).toBeGreaterThan(0);
    expect(new Set(answers.slice(kept))).toEqual(new Set([503]));
    const full = await deliver(big.slug, callEnded(40_000), '192.0.2.3');
    expectError(full, 503, 'unavailable');
    expect(Number(full.headers.get('retry-after'))).toBeGreaterThan(0);
    const entries = await outbox().find({ firm: big.slug }).toArray();
    expect(entries.reduce((n, e) => n + e.payload.length, 0)).toBeLessThanOrEqual(FIRM_BYTES);
    // Another firm is still kept, until the whole outbox is full.
    const small = await createFirm(stack, { voice_webhook_secret: SECRET });
    expect((await deliver(small.slug, callEnded(), '192.0.2.4')).status).toBe(200);
    let status = 200;
    for (let f = 0; f < 6 && status === 200; f++) {
      const filler = await createFirm(stack, { voice_webhook_secret: SECRET });
      for (let i = 0; i < 4 && status === 200; i++) {
        status = (await deliver(filler.slug, callEnded(40_000), '192.0.2.5')).status;
      }
    }
    expect(status).toBe(503);
    const late = await createFirm(stack, { voice_webhook_secret: SECRET });
    expectError(await deliver(late.slug, callEnded(40_000), '192.0.2.6'), 503, 'unavailable');
    const all = await outbox().find({}).toArray();
    expect(all.reduce((n, e) => n + e.payload.length, 0)).toBeLessThanOrEqual(TOTAL_BYTES);
  });

  it('the public /readyz says only "not ready"; the platform key sees which store is down', async () => {
    const open = await stack.api.get('/readyz');
    expectError(open, 503, 'unavailable');
    expect(open.body.error.details).toBeUndefined();
    expect(open.text).not.toMatch(/redis/i);
    expect(Number(open.headers.get('retry-after'))).toBeGreaterThan(0);
    const detailed = await stack.admin.get('/readyz');
    expectError(detailed, 503, 'unavailable');
    expect(detailed.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: '/redis' })]),
    );
  });
});
