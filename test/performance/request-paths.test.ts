// The store calls of the two hot request paths (docs/performance.md#scenarios), which the bench's
// baselines issue too: create-outbound-call with the firm's do-not-call index ready reads nothing
// from the database; while the index is not ready a web process asks for its rebuild once in a
// while, not on every request; a signed call webhook delivery reads the change epoch once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { Redis } from 'ioredis';
import { createFirm, freshMongoUri, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../calls/support.js';
import { eventually } from '../helpers/eventually.js';
import { rebuildDncIndex } from '../../core/domain/compliance/dnc-index.js';
import { jobId } from '../../jobs/define.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { rebuildFirmAttempts } from '../../core/domain/compliance/frequency.js';

const SECRET = 'whsec_request_paths_test_secret';

let stack: Stack;
beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  stack = await startStack({ env: { MONGODB_URI: uri.toString() } });
});
afterAll(async () => {
  await stack?.stop();
});

const call = (client: Awaited<ReturnType<typeof createFirm>>['client'], firmSlug: string, agentId: string) =>
  client.post('/api/v2/create-outbound-call', { toNumber: '+12125550100', agentId, firmSlug });

/** The MongoDB commands `work` issues through the web process's client, by name. */
async function mongoCommands(work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (e: CommandStartedEvent) => seen.push(e.commandName);
  stack.services.mongo.client.on('commandStarted', listener);
  try {
    await work();
  } finally {
    stack.services.mongo.client.off('commandStarted', listener);
  }
  return seen;
}

const rebuildJob = (slug: string) => stack.services.queues.maintenance.getJob(jobId('dnc-index', slug));

describe('create-outbound-call', () => {
  it('with the do-not-call index and the dial attempts ready, a warm request inserts the call and reads nothing', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    await rebuildDncIndex(stack.services, firm.slug);
    await rebuildFirmAttempts(stack.services, firm.slug);
    for (let i = 0; i < 2; i++) expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    const commands = await mongoCommands(async () =>
      expect((await call(firm.client, firm.slug, agentId)).status).toBe(200),
    );
    expect(commands).toEqual(['insert']);
  });

  it('while the index is not ready, asks for its rebuild once, not on every request', async () => {
    const firm = await createFirm(stack);
    const agentId = await createAgent(firm.client, firm.slug);
    expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    // No worker runs here: the job the request asked for waits in the queue.
    const asked = await rebuildJob(firm.slug);
    expect(asked).toBeDefined();
    await asked!.remove();
    // The database answered for the index meanwhile; the next requests do not ask again.
    for (let i = 0; i < 2; i++) expect((await call(firm.client, firm.slug, agentId)).status).toBe(200);
    expect(await rebuildJob(firm.slug)).toBeUndefined();
  });
});

describe('the call webhook', () => {
  it('a signed delivery looks at the firm’s limit, counts it, and reads the change epoch once', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET });
    const deliver = async (n: number) => {
      const raw = JSON.stringify({ event: 'call_started', call: { call_id: `paths_${firm.slug}_${n}` } });
      const res = await fetch(`${stack.baseUrl}/api/v2/${firm.slug}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
        body: raw,
      });
      expect(res.status, await res.text()).toBe(200);
    };
    await deliver(0); // warm: the firm is in the read cache
    const keys = redisKeys(stack.config);
    // A monitoring connection of our own rather than `monitor()`'s: ioredis marks a connection
    // monitoring a tick after MONITOR's OK, so lines that arrive with the OK (a busy server) are
    // replies to no command, reported as "Command queue state error" — which `monitor()` turns
    // into its failure. Those lines come before the delivery below and are not what is counted;
    // any other error fails the test.
    const monitor = new Redis(stack.config.redisUrl, { monitor: true, lazyConnect: true });
    const errors: Error[] = [];
    monitor.on('error', (err: Error) => errors.push(err));
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (!source.startsWith('lua')) seen.push(args);
    });
    const monitoring = new Promise<void>((resolve) => monitor.once('monitoring', () => resolve()));
    await monitor.connect();
    await monitoring;
    try {
      await deliver(1);
      // MONITOR reports what the server ran, in order: once a marker sent after the delivery is
      // seen, everything the delivery issued is.
      const marker = `marker-${firm.slug}`;
      await stack.services.redis.echo(marker);
      await eventually(async () => expect(seen.some((args) => args[1] === marker)).toBe(true));
    } finally {
      monitor.disconnect();
    }
    expect(errors.filter((err) => !err.message.startsWith('Command queue state error'))).toEqual([]);
    const epochReads = seen.filter(
      ([cmd, key]) => cmd?.toLowerCase() === 'get' && key === keys.readCacheEpoch(),
    );
    const limitSteps = seen.filter(
      ([cmd, , , key]) => cmd?.toLowerCase() === 'evalsha' && key === keys.rateLimitCounts('w', firm.slug),
    );
    expect(limitSteps).toHaveLength(2);
    expect(epochReads).toHaveLength(1);
  });
});
