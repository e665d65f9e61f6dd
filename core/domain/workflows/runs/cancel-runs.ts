import type { Services } from '../../../wiring/services.js';
import { JOBS } from '../../../../jobs/table.js';
import { redisKeys } from '../../../platform/redis-keys.js';
import { readMeta } from '../workflows.js';
import {
  FINISHED_STEP,
  runsCollection,
  stepsCollection,
  withRunLock,
  type WorkflowRunDoc,
  type WorkflowStepDoc,
} from './run-store.js';
import { unregisterWaiter } from './waits.js';

// A deleted workflow's runs under way end `cancelled` at once (docs/workflows.md#routes), not at
// their next step: a run parked in a day's `wait` or a week's `wait_for` would otherwise show
// `running` until its timer, for a workflow the firm can no longer see. The DELETE adds one job
// (workflowCancelRuns) that walks the workflow's runs under way with one cursor over the runs'
// index (workflow_id, started_at, _id), each run cancelled under its lock. Each step still reads
// the workflow before it acts (steps.ts), so a run this job has not reached yet stops there too.

export const DELETED_REASON = 'The workflow was deleted: its runs under way stop.';

/** Cancels the runs under way of a workflow that is gone; returns how many it cancelled. */
export async function cancelDeletedWorkflowRuns(
  services: Services,
  job: { firm: string; workflowId: string },
): Promise<number> {
  const db = services.mongo.db;
  // A workflow that exists is not this job's (its runs go on).
  if ((await readMeta(db, job.firm, job.workflowId)) !== null) return 0;
  const cursor = runsCollection(db)
    .find({ workflow_id: job.workflowId, status: 'running' }, { projection: { _id: 1, firm: 1 } })
    .sort({ started_at: -1, _id: -1 })
    .batchSize(100);
  let cancelled = 0;
  for await (const run of cursor) {
    if (run.firm !== job.firm) continue;
    if (await cancelRun(services, run._id, DELETED_REASON)) cancelled += 1;
  }
  return cancelled;
}

/**
 * Ends a run under way as `cancelled`, under its lock, with the steps that wait (a `wait`'s next
 * step not begun, a `wait_for`) cancelled beside it; then their parked jobs are removed and a
 * `wait_for` no longer waits on its lead. A step whose action has begun (its effect recorded) is
 * left to finish: what it sends is recorded as sent, and nothing after it runs (the run is
 * cancelled). False when the run was no longer under way.
 */
export async function cancelRun(services: Services, runId: string, reason: string): Promise<boolean> {
  const db = services.mongo.db;
  let ended: { run: WorkflowRunDoc; steps: WorkflowStepDoc[] } | null = null;
  await withRunLock(services, runId, async () => {
    const run = await runsCollection(db).findOne({ _id: runId });
    if (run === null || run.status !== 'running') return;
    const now = new Date();
    const stopped: WorkflowStepDoc[] = [];
    for (const id of run.step_ids) {
      const step = await stepsCollection(db).findOne({ _id: id });
      if (step === null || FINISHED_STEP.has(step.status) || step.effect !== undefined) continue;
      await stepsCollection(db).updateOne(
        { _id: id },
        { $set: { status: 'cancelled', result: { ...(step.result ?? {}), reason }, finished_at: now } },
      );
      stopped.push(step);
    }
    await runsCollection(db).updateOne(
      { _id: runId },
      { $set: { status: 'cancelled', status_reason: reason, finished_at: now, updated_at: now } },
    );
    ended = { run, steps: stopped };
  });
  if (ended === null) return false;
  const { run, steps } = ended as { run: WorkflowRunDoc; steps: WorkflowStepDoc[] };
  await services.redis.srem(redisKeys(services.config).workflowRunsActive(run.firm), run._id);
  for (const step of steps) {
    if (step.status === 'waiting' && run.lead_id !== null)
      await unregisterWaiter(services, run.firm, run.lead_id, step._id);
    const job = { firm: run.firm, runId: run._id, stepId: step._id };
    // A parked job would only find its step cancelled; one running now cannot be removed (kept).
    await removeJob(services, JOBS.workflowStep.id!(job));
    if (step.status === 'waiting') await removeJob(services, JOBS.workflowWaitTimeout.id!(job));
  }
  return true;
}

async function removeJob(services: Services, id: string): Promise<void> {
  await services.queues[JOBS.workflowStep.queue].remove(id).catch(() => 0);
}
