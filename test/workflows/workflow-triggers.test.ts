// Which workflows an event starts (docs/workflows.md#runs), on real peers (the API, the workers,
// Redis, FerretDB): the per-process cache of a firm's trigger index is kept under a version that
// a Redis which lost its data cannot hand out again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../core/domain/events/record-event.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { jobId } from '../../jobs/define.js';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ workers: true });
});
afterAll(async () => {
  await stack?.stop();
});

async function activeWorkflow(
  client: ApiClient,
  firmSlug: string,
  name: string,
  nodes: unknown[],
  edges: unknown[],
) {
  const created = await client.post('/api/workflows', { firmSlug, name, nodes, edges });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const id = created.body.id as string;
  const activated = await client.post(`/api/workflows/${id}/activate`, {});
  expect(activated.status, JSON.stringify(activated.body)).toBe(200);
  return id;
}

/** A workflow that tags each new lead. */
const tagger = (client: ApiClient, firmSlug: string, tag: string) =>
  activeWorkflow(
    client,
    firmSlug,
    `Tag ${tag}`,
    [
      { id: 'new', type: 'trigger.event', data: { event: 'lead.created' } },
      { id: 'tag', type: 'update_lead', data: { tags: [tag] } },
    ],
    [{ id: 'e1', source: 'new', target: 'tag' }],
  );

/** A new lead of the firm, once the fan-out of its lead.created (which starts the runs) has run. */
async function newLeadFannedOut(firm: { slug: string; client: ApiClient }): Promise<string> {
  const res = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: `L${rand(2)}` });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const leadId = res.body.id as string;
  const eventId = eventIdOf({ firm: firm.slug, type: 'lead.created', subject: leadId, key: 'created' });
  await eventually(async () => {
    const job = await stack.services.queues.webhooks.getJob(jobId('fanout', eventId));
    expect(await job?.getState()).toBe('completed');
  }, 30_000);
  return leadId;
}

const runsOf = async (client: ApiClient, workflowId: string) =>
  (await client.get(`/api/workflows/${workflowId}/runs`)).body.runs as unknown[];

describe('the trigger index cache', () => {
  it("a change after Redis lost the index's version still reaches the next event", async () => {
    const firm = await createFirm(stack);
    const first = await tagger(firm.client, firm.slug, 'first');
    // The fan-out caches the firm's lead.created workflows under the version of now.
    await newLeadFannedOut(firm);
    expect(await runsOf(firm.client, first)).toHaveLength(1);

    // Redis loses the version (a restart without persistence, a failover to an empty replica).
    await stack.services.redis.del(redisKeys(stack.config).workflowTriggersVersion(firm.slug));
    const second = await tagger(firm.client, firm.slug, 'second');
    await newLeadFannedOut(firm);
    expect(await runsOf(firm.client, first)).toHaveLength(2);
    // The cached list from before, had the change's version been one already used, lacked it.
    expect(await runsOf(firm.client, second)).toHaveLength(1);
  });
});
