// Which workflows an event starts (docs/workflows.md#runs), on real peers (the API, the workers,
// Redis, FerretDB): the per-process cache of a firm's trigger index is kept under a version that
// a Redis which lost its data cannot hand out again; a change a workflow's step made starts none of
// the workflows whose runs led to it (no ping-pong between two workflows, nor a workflow with itself).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../core/domain/events/record-event.js';
import { CACHE_COPY_MAX_AGE_MS } from '../../core/platform/cache-version.js';
import { clock } from '../../core/platform/clock.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { jobId } from '../../jobs/define.js';
import { eventsOf } from '../helpers/events.js';
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
afterEach(() => clock.reset());

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

  it('a workflow activated while Redis lost the change of version starts runs a minute later', async () => {
    const firm = await createFirm(stack);
    const first = await tagger(firm.client, firm.slug, 'first');
    // The fan-out caches the firm's lead.created workflows under the version of now.
    await newLeadFannedOut(firm);
    const version = redisKeys(stack.config).workflowTriggersVersion(firm.slug);
    const before = await stack.services.redis.get(version);
    const second = await tagger(firm.client, firm.slug, 'second');
    // A failover to a replica that lacks the activation's bump: the version from before it is back.
    await stack.services.redis.set(version, before!);
    clock.shift(CACHE_COPY_MAX_AGE_MS + 1000);
    await newLeadFannedOut(firm);
    expect(await runsOf(firm.client, first)).toHaveLength(2);
    expect(await runsOf(firm.client, second)).toHaveLength(1);
  });
});

const onlyLead = (notes: string) => ({ field: 'notes', operator: 'equals', value: notes });
const statusIs = (status: string) => ({ field: 'workflow_status', operator: 'equals', value: status });

/** Every lead.updated of the lead, once `count` of them are recorded and fanned out. */
async function settledUpdates(firm: string, leadId: string, count: number) {
  const updates = await eventually(async () => {
    const found = (await eventsOf(stack, firm, leadId)).filter((e) => e.type === 'lead.updated');
    expect(found.length).toBeGreaterThanOrEqual(count);
    return found;
  }, 30_000);
  for (const e of updates) {
    await eventually(async () => {
      const job = await stack.services.queues.webhooks.getJob(jobId('fanout', e.id));
      expect(await job?.getState()).toBe('completed');
    }, 30_000);
  }
  return updates;
}

/** The workflow's runs once none is under way. */
const endedRuns = (client: ApiClient, workflowId: string) =>
  eventually(async () => {
    const runs = (await runsOf(client, workflowId)) as Array<{ status: string }>;
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
    return runs;
  }, 30_000);

describe('workflows that react to changes workflows made', () => {
  it('two workflows that trigger each other run once each, not back and forth', async () => {
    const firm = await createFirm(stack);
    const notes = `ping-pong-${rand(3)}`;
    // Ping sets the status on a new lead and again whenever Pong has set it; Pong answers each.
    const ping = await activeWorkflow(
      firm.client,
      firm.slug,
      'Ping',
      [
        { id: 'new', type: 'trigger.event', data: { event: 'lead.created', filter: onlyLead(notes) } },
        {
          id: 'ponged',
          type: 'trigger.event',
          data: { event: 'lead.updated', filter: [onlyLead(notes), statusIs('pong')] },
        },
        { id: 'set', type: 'update_lead', data: { status: 'ping' } },
      ],
      [
        { id: 'p1', source: 'new', target: 'set' },
        { id: 'p2', source: 'ponged', target: 'set' },
      ],
    );
    const pong = await activeWorkflow(
      firm.client,
      firm.slug,
      'Pong',
      [
        {
          id: 'pinged',
          type: 'trigger.event',
          data: { event: 'lead.updated', filter: [onlyLead(notes), statusIs('ping')] },
        },
        { id: 'set', type: 'update_lead', data: { status: 'pong' } },
      ],
      [{ id: 'q1', source: 'pinged', target: 'set' }],
    );
    const lead = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Pat', notes });
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);

    // Ping's change, then Pong's; each fanned out (Pong's would start Ping again).
    const updates = await settledUpdates(firm.slug, lead.body.id, 2);
    expect(updates.map((e) => e.data.workflow_status)).toEqual(['ping', 'pong']);
    const [pings, pongs] = await Promise.all([endedRuns(firm.client, ping), endedRuns(firm.client, pong)]);
    expect(pings.map((r) => r.status)).toEqual(['completed']);
    expect(pongs.map((r) => r.status)).toEqual(['completed']);
    expect((await firm.client.get(`/api/leads/${lead.body.id}`)).body.workflow_status).toBe('pong');
  });

  it('a workflow whose change it reacts to itself runs once', async () => {
    const firm = await createFirm(stack);
    const notes = `self-${rand(3)}`;
    // Each run tags the lead with the event it reacted to: its own lead.updated, were it to start
    // it again, would add a tag of its own.
    const mark = await activeWorkflow(
      firm.client,
      firm.slug,
      'Mark every change',
      [
        { id: 'new', type: 'trigger.event', data: { event: 'lead.created', filter: onlyLead(notes) } },
        { id: 'changed', type: 'trigger.event', data: { event: 'lead.updated', filter: onlyLead(notes) } },
        { id: 'tag', type: 'update_lead', data: { tags: ['{{event.type}}'] } },
      ],
      [
        { id: 'm1', source: 'new', target: 'tag' },
        { id: 'm2', source: 'changed', target: 'tag' },
      ],
    );
    const lead = await firm.client.post('/api/leads', { firmSlug: firm.slug, first_name: 'Sol', notes });
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);
    await settledUpdates(firm.slug, lead.body.id, 1);
    expect((await endedRuns(firm.client, mark)).map((r) => r.status)).toEqual(['completed']);
    expect((await firm.client.get(`/api/leads/${lead.body.id}`)).body.tags).toEqual(['lead.created']);
  });
});
