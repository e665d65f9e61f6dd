// A firm's Cal.com (at a base URL the firm chooses) answering slots of every minute: a 14-day
// answer is about 1 MiB. 80 availability requests of the firm, each a different query, must
// leave Redis within bounds (only the slots we use are cached, a bounded count and size, a
// bounded cache per firm, the answer read bounded), so that with Redis' maxmemory just above
// what it held before, another firm's webhooks are still taken. And when Redis does refuse
// writes (OOM), a delivery goes to the MongoDB outbox like when Redis is down: never a 500.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { OutboxEntry } from '../../core/domain/deliveries/delivery-outbox.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';
import { SAMPLE_CALLER, callWebhook, conversationCall } from '../fakes/retell-fixtures.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

const API_KEY = 'cal_live_flood_key_0123456789';
const EVENT_TYPE = 7171;
const SECRET = 'whsec_availability_flood_secret';
const DAY = 86_400_000;
const ZONES = ['UTC', 'America/Chicago', 'Europe/Berlin', 'Asia/Tokyo'];
/** The bound stated for one firm's slot cache (docs/appointments.md#availability). */
const SLOTS_CACHE_MAX_BYTES_PER_FIRM = 512 * 1024;
/** Room Redis is given above what it holds before the attack (the attack before bounds took ~50 MB). */
const HEADROOM = 16 * 1024 * 1024;

let redis: PrivateRedis;
let admin: Redis;
let stack: Stack;
let cal: FakeCalcom;

// A slot every minute for 40 days from tomorrow (UTC): 1,440 a day, about 1 MiB for 14 days.
const tomorrow = Math.ceil(Date.now() / DAY) * DAY + DAY;
const everyMinute = Array.from({ length: 40 * 1440 }, (_, i) => tomorrow + i * 60_000);
const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

beforeAll(async () => {
  redis = await startPrivateRedis();
  admin = new Redis(redis.url);
  stack = await startStack({
    env: { REDIS_URL: redis.url, RATE_LIMIT_PER_MINUTE: '10000' },
  });
  cal = await startFakeCalcom({ apiKey: API_KEY, eventTypeId: EVENT_TYPE, slots: everyMinute });
}, 120_000);
afterAll(async () => {
  await admin?.config('SET', 'maxmemory', '0').catch(() => {});
  admin?.disconnect();
  await stack?.stop();
  await cal?.stop();
  await redis?.remove();
});

const usedMemory = async (): Promise<number> =>
  Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);

/** Keys and bytes (MEMORY USAGE) of the firm's slot cache. */
async function slotCacheOf(firm: string): Promise<{ keys: number; bytes: number }> {
  const keys = await admin.keys(`*:appointments:${firm}:slots*`);
  let bytes = 0;
  for (const k of keys) bytes += Number(await admin.memory('USAGE', k)) || 0;
  return { keys: keys.length, bytes };
}

const caller = SAMPLE_CALLER;

function deliver(slug: string) {
  const call = conversationCall(caller, { callId: `call_${rand(8)}`, direction: 'inbound' });
  const raw = JSON.stringify(callWebhook('call_ended', call));
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
  });
}

const keptFor = (firm: string) =>
  stack.services.mongo.db.collection<OutboxEntry>(COLLECTIONS.webhookOutbox).countDocuments({ firm });

describe('the availability cache under a flood of 1 MiB answers', () => {
  it("80 requests leave Redis within the per-firm bound; another firm's webhooks are taken", async () => {
    const attacker = await createFirm(stack, {
      booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: cal.url },
    });
    const other = await createFirm(stack, { voice_webhook_secret: SECRET });
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    const before = await usedMemory();
    await admin.config('SET', 'maxmemory', String(before + HEADROOM));

    const statuses = new Map<number, number>();
    let answerBytes = 0;
    for (let i = 0; i < 80; i++) {
      // Half ask 14 days (about 1 MiB from Cal.com), half 1 to 3 days; each query its own.
      const days = i % 2 === 0 ? 14 : 1 + (i % 3);
      const start = dateOf(tomorrow + (i % 20) * DAY);
      const end = dateOf(tomorrow + ((i % 20) + days - 1) * DAY);
      const timeZone = ZONES[Math.floor(i / 20)]!;
      const res = await attacker.client.get(
        `/api/appointments/availability?${new URLSearchParams({ firmSlug: attacker.slug, start, end, timeZone })}`,
      );
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (i % 10 === 9) console.log(`request ${i + 1}: ${res.status}, used_memory ${await usedMemory()}`);
      answerBytes = Math.max(answerBytes, JSON.stringify(res.body).length);
    }
    const after = await usedMemory();
    const cache = await slotCacheOf(attacker.slug);
    const calAsked = cal.requests.filter((r) => r.path === '/v2/slots').length;
    console.log(
      `80 availability requests: answers ${JSON.stringify(Object.fromEntries(statuses))}, Cal.com asked ${calAsked} times, ` +
        `largest answer of ours ${answerBytes} bytes; the firm's slot cache ${cache.keys} keys, ${cache.bytes} bytes ` +
        `(bound ${SLOTS_CACHE_MAX_BYTES_PER_FIRM}); Redis used_memory ${before} -> ${after} (+${after - before}), maxmemory ${before + HEADROOM}`,
    );
    expect(cache.bytes).toBeLessThanOrEqual(SLOTS_CACHE_MAX_BYTES_PER_FIRM);
    expect(cache.keys).toBeLessThanOrEqual(1);
    expect(after - before).toBeLessThan(HEADROOM / 4);

    // Another firm's deliveries are taken, and Redis still takes writes: full (noeviction past
    // maxmemory) it would refuse them, and the deliveries would go to the outbox. Whether one went
    // there anyway is not asserted: an add slower than ENQUEUE_TIMEOUT_MS on a loaded machine
    // sends it there too (and the web's later ones after it), with Redis as roomy as ever.
    for (let i = 0; i < 5; i++) {
      const res = await deliver(other.slug);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(await admin.set(`probe:${rand(4)}`, 'x'.repeat(64 * 1024))).toBe('OK');
    console.log(`another firm's 5 deliveries: ${await keptFor(other.slug)} kept in the outbox`);
  }, 300_000);

  it('Redis refusing writes (OOM): a delivery is kept in the MongoDB outbox, never a 500', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', String(Math.max(1, (await usedMemory()) - 1024 * 1024)));
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await deliver(firm.slug);
        statuses.push(res.status);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      }
      const kept = await keptFor(firm.slug);
      console.log(`with Redis over maxmemory: answers ${statuses.join(',')}, kept in the outbox ${kept}`);
      expect(kept).toBe(3);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
  }, 120_000);
});
