import type { Services } from '../../../wiring/services.js';
import { enqueue } from '../../../../jobs/define.js';
import { JOBS } from '../../../../jobs/table.js';
import { claim } from '../../../platform/db/claim.js';
import { redisKeys } from '../../../platform/redis-keys.js';
import { causedByWorkflows, type DomainEvent } from '../../events/event-types.js';
import { conditionsHold } from '../expressions.js';
import { dataOf, eventMatches, patternsMatching, TRIGGER } from '../vocabulary.js';
import { loadVersion, triggerEntries, triggerKeyOf, versionIdOf } from '../versions.js';
import { readMeta } from '../workflows.js';
import { LISTENING_CLOCK_MARGIN_MS } from '../../events/endpoints.js';
import { eventData, leadIdOf } from './context.js';
import { newStep, runIdOf, runsCollection, stepsCollection, type WorkflowRunDoc } from './run-store.js';
import { endRun, resolveWaitFor } from './steps.js';
import { waitersOf } from './waits.js';

// What an event starts (docs/workflows.md#runs): the `wait_for` steps waiting on an event of its
// kind about its lead go on along their `matched` branch, and each active workflow of the firm
// with a trigger on its type whose filter holds starts one run — one per (workflow, event): the
// run's _id derives from the pair, so a retried trigger starts nothing twice, nor an event
// recorded again after an edit. A workflow that began listening after the event was recorded
// starts none for it (an event recorded again by a retried step is fanned out again). The index
// says which workflows to look at; each one's record says whether it runs and with which version:
// an entry left by a change that failed half-way (or one under way) starts no run of a workflow
// deleted or inactive, and no run of a version the workflow never took.

/** How much earlier than a `wait_for` step began an event it waits for may say it happened. */
const EARLY_EVENT_MS = 60_000;

/** Starts the runs an event triggers, and ends the waits it satisfies. Returns the runs' ids. */
export async function startWorkflowRuns(services: Services, event: DomainEvent): Promise<string[]> {
  const data = eventData(event);
  const leadId = leadIdOf({ subject: event.subject, data });
  // Sent together, what decides the reads: the firm's trigger index version, and whether it
  // has runs under way at all (a `wait_for` waiter belongs to a run under way, added to that set
  // before its first step): a firm without one has no waiter to read.
  const keys = redisKeys(services.config);
  const [version, running] = await Promise.all([
    services.redis.get(keys.workflowTriggersVersion(event.firm)),
    services.redis.exists(keys.workflowRunsActive(event.firm)),
  ]);
  if (leadId !== null && running > 0) {
    for (const waiter of await waitersOf(services, event.firm, leadId)) {
      if (!eventMatches(waiter.event, event.type)) continue;
      // An event of before the wait does not end it; senders' times are coarse (Cal.com's to the
      // second), so one within EARLY_EVENT_MS of the wait's start counts.
      if (new Date(waiter.since).getTime() - EARLY_EVENT_MS > event.occurred_at.getTime()) continue;
      await resolveWaitFor(
        services,
        { firm: event.firm, runId: waiter.run_id, stepId: waiter.step_id },
        'matched',
        event._id,
      );
    }
  }

  const index = await triggerEntries(
    services,
    version,
    patternsMatching(event.type).map((pattern) => triggerKeyOf(event.firm, pattern)),
  );
  const recordedMs = (event.recorded_at ?? event.occurred_at).getTime();
  const listening = new Set<string>();
  for (const list of index) {
    for (const e of list) {
      if ((e.since ?? 0) <= recordedMs + LISTENING_CLOCK_MARGIN_MS) listening.add(e.workflow_id);
    }
  }

  const started: string[] = [];
  // A change a workflow's step made starts none of the workflows whose runs led to it, that one
  // included: two workflows that each change what the other reacts to run once each, not forever.
  const chain = new Set(causedByWorkflows(event));
  for (const workflowId of listening) {
    if (chain.has(workflowId)) continue;
    const meta = await readMeta(services.mongo.db, event.firm, workflowId);
    if (meta?.active !== true || meta.version === undefined) continue;
    const versionId = versionIdOf(workflowId, meta.version);
    const version = await loadVersion(services.mongo.db, versionId);
    if (version === null) continue;
    const trigger = version.graph.triggers.find((node) => {
      const d = dataOf(node);
      return (
        typeof d.event === 'string' && eventMatches(d.event, event.type) && conditionsHold(d, 'filter', data)
      );
    });
    if (trigger === undefined) continue;
    started.push(
      await startRun(services, event, leadId, workflowId, version.doc.version, versionId, trigger.id),
    );
  }
  return started;
}

async function startRun(
  services: Services,
  event: DomainEvent,
  leadId: string | null,
  workflowId: string,
  version: number,
  versionId: string,
  triggerNode: string,
): Promise<string> {
  const now = new Date();
  const runId = runIdOf(event.firm, workflowId, event._id);
  const first = newStep({ _id: runId, firm: event.firm }, triggerNode, TRIGGER, []);
  const run: WorkflowRunDoc = {
    _id: runId,
    firm: event.firm,
    workflow_id: workflowId,
    version,
    version_id: versionId,
    event_id: event._id,
    event_type: event.type,
    subject: event.subject,
    lead_id: leadId,
    trigger_node: triggerNode,
    status: 'running',
    status_reason: null,
    limit: null,
    step_ids: [first._id],
    started_at: now,
    updated_at: now,
    finished_at: null,
  };
  // The run first, then its first step: a retry after a crash between them finds the run and
  // makes the step (each a claim).
  await claim(runsCollection(services.mongo.db), run);
  await claim(stepsCollection(services.mongo.db), first);
  const stored = await runsCollection(services.mongo.db).findOne({ _id: runId });
  if (stored === null || stored.status !== 'running') return runId;

  // The firm's bound on runs under way: a set of run ids, so a retried start counts once.
  const key = redisKeys(services.config).workflowRunsActive(event.firm);
  const [[, added], [, count]] = (await services.redis.multi().sadd(key, runId).scard(key).exec()) as [
    [unknown, number],
    [unknown, number],
  ];
  const max = services.config.workflowMaxConcurrentRuns;
  if (added === 1 && count > max) {
    await endRun(
      services,
      stored,
      'limited',
      `The firm had ${max} workflow runs under way, its bound (WORKFLOW_MAX_CONCURRENT_RUNS): this run did not start.`,
      'concurrent_runs',
      first._id,
    );
    return runId;
  }
  await enqueue(services.queues, JOBS.workflowStep, { firm: event.firm, runId, stepId: first._id });
  return runId;
}
