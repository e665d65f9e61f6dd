// A Redis that accepts connections but answers nothing (its process stopped, a partition that
// drops packets) is unreachable as much as a stopped one: the web gives a command
// PRODUCER_COMMAND_TIMEOUT_MS (core/platform/redis.ts), then answers as for Redis down — 503 with
// Retry-After for create-outbound-call, and a signed call webhook kept in MongoDB's outbox, 200 —
// instead of holding the request until TCP gives up (150 s was seen).
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createAgent } from '../chat/chat-helpers.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { postSigned } from '../webhooks/support.js';

const SECRET = `voice-${rand(8)}`;
/** A hang detector, far above the command timeout: without it, the request waits for Redis to wake. */
const HUNG_MS = 60_000;

let redis: PrivateRedis;
let redisPid: number;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  // A private Redis, so stopping its process disturbs no other test file.
  redis = await startPrivateRedis();
  const probe = new Redis(redis.url);
  redisPid = Number(/process_id:(\d+)/.exec(await probe.info('server'))![1]);
  await probe.quit();
  stack = await startStack({ env: { REDIS_URL: redis.url } });
  firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  agentId = (await createAgent(firm.client, firm.slug)).agent_id;
});

afterAll(async () => {
  if (redisPid !== undefined) process.kill(redisPid, 'SIGCONT');
  await stack?.stop();
  await redis?.remove();
});

/** The answer, or 'hung' when none came within HUNG_MS. */
const within = <T>(request: Promise<T>): Promise<T | 'hung'> =>
  Promise.race([request, sleep(HUNG_MS).then(() => 'hung' as const)]);

describe('a Redis that answers nothing', () => {
  it('create-outbound-call answers 503 with Retry-After, and a signed webhook is kept in MongoDB: 200', async () => {
    const call = () =>
      firm.client.post('/api/v2/create-outbound-call', {
        firmSlug: firm.slug,
        agentId,
        toNumber: '+14155550123',
      });
    const webhook = () =>
      postSigned(stack, firm.slug, SECRET, { event: 'call_started', call: { call_id: `hung-${rand(6)}` } });
    expect((await call()).status).toBe(200);
    expect((await webhook()).status).toBe(200);
    const outbox = stack.services.mongo.db.collection(COLLECTIONS.webhookOutbox);
    const before = await outbox.countDocuments({});

    process.kill(redisPid, 'SIGSTOP');
    try {
      const refused = await within(call());
      expect(refused, 'create-outbound-call waited for the stopped Redis').not.toBe('hung');
      if (refused === 'hung') return;
      expectError(refused, 503, 'unavailable');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // The web dropped the connection that answered nothing, before its command timed out: it is
      // not ready now, so what follows skips Redis at once, as with Redis down, instead of each
      // request waiting out the timeout again (a webhook waited 12 s: Retell gives up after 10).
      expect(stack.services.redis.status).not.toBe('ready');

      const kept = await within(webhook());
      expect(kept, 'the webhook waited for the stopped Redis').not.toBe('hung');
      if (kept === 'hung') return;
      expect(kept.status, kept.text).toBe(200);
      expect(await outbox.countDocuments({})).toBe(before + 1);
    } finally {
      process.kill(redisPid, 'SIGCONT');
    }
    // Once Redis answers again, the connection is ready again and calls are taken.
    await eventually(async () => expect(stack.services.redis.status).toBe('ready'), 30_000);
    expect((await call()).status).toBe(200);
  });
});
