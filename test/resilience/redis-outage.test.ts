// A stopped Redis must give 503 from enqueueing routes (never a 200 for work not enqueued),
// leave nothing half-written, keep MongoDB-only reads working, and recover by itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';

let redis: PrivateRedis;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;

beforeAll(async () => {
  // A private Redis, so stopping it does not disturb test files running in parallel.
  redis = await startPrivateRedis();
  stack = await startStack({ env: { REDIS_URL: redis.url } });
  firm = await createFirm(stack);
  const agent = await firm.client.post('/api/v2/create-agent', {
    firmSlug: firm.slug,
    agent_name: 'Outage agent',
    voice_id: 'sim-en-us-ava',
  });
  expect(agent.status).toBe(200);
  agentId = agent.body.agent_id;
});

afterAll(async () => {
  await stack?.stop();
  await redis?.remove();
});

const callBody = () => ({ toNumber: '+14155550123', agentId, firmSlug: firm.slug });

describe('Redis outage', () => {
  it('answers 503 from an enqueueing route while Redis is stopped, writes nothing, and recovers', async () => {
    const before = await firm.client.post('/api/v2/create-outbound-call', callBody());
    expect(before.status).toBe(200);

    await redis.stop();
    await eventually(async () => expect(stack.services.redis.status).not.toBe('ready'));

    const during = await firm.client.post('/api/v2/create-outbound-call', callBody());
    expect(during.status).toBe(503);
    expect(during.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(during.body).toEqual({
      error: { code: 'unavailable', message: expect.stringContaining('(redis)') },
    });
    // Nothing half-written: only the call made before the outage exists.
    expect(await stack.services.mongo.db.collection(COLLECTIONS.calls).countDocuments({})).toBe(1);

    // Which store is down: for the platform key only (the public answer says only "not ready").
    const ready = await stack.admin.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.error.code).toBe('unavailable');
    expect(ready.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: '/redis' })]),
    );

    // Reads served from MongoDB keep working (the rate limiter does not take them down).
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).status).toBe(200);

    await redis.start();
    await eventually(async () => expect((await stack.api.get('/readyz')).status).toBe(200), 20_000);
    const after = await firm.client.post('/api/v2/create-outbound-call', callBody());
    expect(after.status).toBe(200);
    const waiting = await stack.services.queues.calls.getJobCounts(
      'waiting',
      'delayed',
      'active',
      'completed',
    );
    expect(Object.values(waiting).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
  });
});
