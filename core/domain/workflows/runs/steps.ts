import type { Services } from '../../../wiring/services.js';
import { enqueue } from '../../../../jobs/define.js';
import { JOBS } from '../../../../jobs/table.js';
import { claim } from '../../../platform/db/claim.js';
import { COLLECTIONS, collection } from '../../../platform/db/collections.js';
import { runEffect } from '../../../platform/db/effect-recorder.js';
import type { Attempt } from '../../../platform/db/effect-records.js';
import { redisKeys } from '../../../platform/redis-keys.js';
import { clock } from '../../../platform/clock.js';
import { localTime, zonedTimeToUtc } from '../../../platform/time-zone.js';
import { getFirm, type FirmDoc } from '../../firms/firms.js';
import { eventsCollection } from '../../events/record-event.js';
import { causedByWorkflows } from '../../events/event-types.js';
import { conditionsHold } from '../expressions.js';
import {
  clockMinutes,
  dataOf,
  durationMs,
  isAction,
  isKnownType,
  nextEdges,
  type ActionType,
} from '../vocabulary.js';
import { loadVersion, type LoadedVersion } from '../versions.js';
import { readMeta } from '../workflows.js';
import { ACTIONS, isFinalActionFailure, matterOnPath, type MatterFrom } from './actions.js';
import { contextOf, eventData, readLead, readRunLead } from './context.js';
import {
  FINISHED_STEP,
  newStep,
  runsCollection,
  stepIdOf,
  stepSubject,
  stepsCollection,
  withRunLock,
  type RunLimit,
  type RunStatus,
  type StepStatus,
  type WorkflowRunDoc,
  type WorkflowStepDoc,
} from './run-store.js';
import { registerWaiter, unregisterWaiter } from './waits.js';
import { DELETED_REASON } from './cancel-runs.js';

// One step of a run (the workflowStep job): the node's work, then — under the run's lock — the
// next steps created, the step finished and the next steps' jobs added (a `wait`'s with its
// delay). A retried job finds its step finished and only adds the next jobs again (BullMQ knows
// them by id: nothing new). Every job parked for a run (a step's, a `wait_for`'s timeout) is added
// under the run's lock while the run is under way: a cancel (cancel-runs.ts) takes the same lock,
// so it either comes first, and nothing is added, or after, and removes what was. A run ends
// `completed` when its last open step finishes, or earlier with `limited` (a bound), `failed` (an
// action failed for good) or `cancelled`.

export interface WaitResolutionDoc {
  _id: string;
  outcome: 'matched' | 'timeout';
  event_id: string | null;
  at: Date;
}

const resolutions = (services: Services) =>
  collection<WaitResolutionDoc>(services.mongo.db, COLLECTIONS.workflowWaitResolutions);

/** Logical milliseconds as wall milliseconds (WORKFLOW_TIME_SCALE: tests make a day pass in ms). */
export const scaled = (services: Services, ms: number): number =>
  Math.max(0, Math.round(ms / services.config.workflowTimeScale));

/** The next instant at `minutes` past midnight in `timeZone` after `now` (a `wait` until a local time). */
export function nextLocalTime(now: number, minutes: number, timeZone: string): number {
  const t = localTime(now, timeZone);
  for (let day = 0; day < 3; day++) {
    const date = new Date(Date.UTC(t.year, t.month - 1, t.day + day));
    const at = zonedTimeToUtc(
      { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() },
      minutes,
      timeZone,
    );
    if (at > now) return at;
  }
  return now + 86_400_000;
}

async function readRun(services: Services, runId: string): Promise<WorkflowRunDoc | null> {
  return runsCollection(services.mongo.db).findOne({ _id: runId });
}

/**
 * Adds the jobs of a finished step's next steps (a repeat adds nothing BullMQ still knows); the
 * caller holds the run's lock and has seen the run under way.
 */
async function enqueueNext(services: Services, step: WorkflowStepDoc): Promise<void> {
  const delay =
    step.due_at === null || step.node_type !== 'wait' ? undefined : step.due_at.getTime() - Date.now();
  for (const id of step.next) {
    await enqueue(
      services.queues,
      JOBS.workflowStep,
      { firm: step.firm, runId: step.run_id, stepId: id },
      delay === undefined ? {} : { delay },
    );
  }
}

/** Ends a run under way (a bound, a failure, a cancel): its other steps stop where they stand. */
export async function endRun(
  services: Services,
  run: WorkflowRunDoc,
  status: Exclude<RunStatus, 'running'>,
  reason: string | null,
  limit: RunLimit | null = null,
  /** A step that did not begin because of it (the run's first, at a bound on runs). */
  stoppedStep?: string,
): Promise<void> {
  await withRunLock(services, run._id, async () => {
    const current = await readRun(services, run._id);
    if (current === null || current.status !== 'running') return;
    const now = new Date();
    if (stoppedStep !== undefined) {
      await stepsCollection(services.mongo.db).updateOne(
        { _id: stoppedStep },
        {
          $set: {
            status: status === 'limited' ? 'limited' : 'cancelled',
            result: { reason },
            finished_at: now,
          },
        },
      );
    }
    await runsCollection(services.mongo.db).updateOne(
      { _id: run._id },
      { $set: { status, status_reason: reason, limit, finished_at: now, updated_at: now } },
    );
  });
  await services.redis.srem(redisKeys(services.config).workflowRunsActive(run.firm), run._id);
}

/** A finished step's next jobs added again (a retried job), if the run is under way; the caller holds the run's lock. */
async function enqueueNextIfRunning(services: Services, step: WorkflowStepDoc): Promise<void> {
  if (step.next.length > 0 && (await readRun(services, step.run_id))?.status === 'running')
    await enqueueNext(services, step);
}

/** enqueueNextIfRunning, taking the run's lock. */
async function enqueueNextAgain(services: Services, step: WorkflowStepDoc): Promise<void> {
  if (step.next.length === 0) return;
  await withRunLock(services, step.run_id, () => enqueueNextIfRunning(services, step));
}

/** A run whose every step has finished is completed. */
async function settleRun(services: Services, runId: string): Promise<void> {
  let ended: WorkflowRunDoc | null = null;
  await withRunLock(services, runId, async () => {
    const run = await readRun(services, runId);
    if (run === null || run.status !== 'running') return;
    const steps = stepsCollection(services.mongo.db);
    for (const id of run.step_ids) {
      const step = await steps.findOne({ _id: id }, { projection: { status: 1 } });
      if (step !== null && !FINISHED_STEP.has(step.status)) return;
    }
    const now = new Date();
    await runsCollection(services.mongo.db).updateOne(
      { _id: runId },
      { $set: { status: 'completed', finished_at: now, updated_at: now } },
    );
    ended = run;
  });
  if (ended !== null) {
    await services.redis.srem(
      redisKeys(services.config).workflowRunsActive((ended as WorkflowRunDoc).firm),
      runId,
    );
  }
}

/**
 * Finishes a step: under the run's lock its next steps are created (each a claim on its id) and
 * listed on the run, the step records how it ended, and their jobs are added while the run is
 * under way. A step found finished already (a retried job, a `wait_for` resolved twice) keeps how
 * it ended, and its next jobs are added again.
 */
async function finishStep(
  services: Services,
  version: LoadedVersion,
  seen: WorkflowStepDoc,
  outcome: {
    status: StepStatus;
    branch?: string | null;
    result?: Record<string, unknown> | null;
    error?: string | null;
    due_at?: Date | null;
    /** The run ends with this step (a bound hit, a failure), in the same turn under its lock. */
    endsRun?: { status: Exclude<RunStatus, 'running'>; reason: string; limit: RunLimit | null };
  },
): Promise<WorkflowStepDoc> {
  const db = services.mongo.db;
  const finished = await withRunLock(services, seen.run_id, async () => {
    const step = await stepsCollection(db).findOne({ _id: seen._id });
    if (step === null) throw new Error(`The workflow step ${seen._id} is missing.`);
    if (FINISHED_STEP.has(step.status)) {
      await enqueueNextIfRunning(services, step);
      return step;
    }
    const node = version.graph.nodes.get(step.node_id);
    const goesOn = outcome.status === 'done' || outcome.status === 'skipped';
    const edges = node === undefined || !goesOn ? [] : nextEdges(version.graph, node, outcome.branch ?? null);
    const children = edges
      .filter((e) => version.graph.nodes.has(e.target))
      .map((e) =>
        newStep(
          { _id: step.run_id, firm: step.firm },
          e.target,
          (version.graph.nodes.get(e.target)!.type as string | undefined) ?? null,
          step.path_visits,
        ),
      );
    // Two edges to one node make one step (a join of parallel branches runs once per visit).
    const unique = [...new Map(children.map((c) => [c._id, c])).values()];
    for (const child of unique) await claim(stepsCollection(db), child);
    let run: WorkflowRunDoc | null = null;
    if (unique.length > 0) {
      run = await readRun(services, step.run_id);
      const ids = new Set(run?.step_ids ?? []);
      for (const c of unique) ids.add(c._id);
      await runsCollection(db).updateOne(
        { _id: step.run_id },
        { $set: { step_ids: [...ids], updated_at: new Date() } },
      );
    }
    const changes = {
      status: outcome.status,
      branch: outcome.branch ?? null,
      result: outcome.result ?? step.result,
      error: outcome.error ?? null,
      next: unique.map((c) => c._id),
      due_at: outcome.due_at ?? step.due_at,
      started_at: step.started_at ?? new Date(),
      finished_at: new Date(),
    };
    await stepsCollection(db).updateOne({ _id: step._id }, { $set: changes });
    if (outcome.endsRun !== undefined) {
      const { status, reason, limit } = outcome.endsRun;
      const now = new Date();
      await runsCollection(db).updateOne(
        { _id: step.run_id },
        { $set: { status, status_reason: reason, limit, finished_at: now, updated_at: now } },
      );
    }
    const done = { ...step, ...changes };
    if (outcome.endsRun === undefined && run?.status === 'running') await enqueueNext(services, done);
    return done;
  });
  if (outcome.endsRun !== undefined) {
    await services.redis.srem(redisKeys(services.config).workflowRunsActive(seen.firm), seen.run_id);
  }
  if (finished.next.length === 0) await settleRun(services, finished.run_id);
  return finished;
}

/** The bounds a step is taken under: the loop bound and the firm's steps a day. Null: within them. */
async function boundHit(
  services: Services,
  step: WorkflowStepDoc,
): Promise<{ limit: RunLimit; reason: string } | null> {
  const maxVisits = services.config.workflowMaxLoopIterations;
  if (step.visit > maxVisits) {
    return {
      limit: 'loop_iterations',
      reason: `The run entered node "${step.node_id}" ${step.visit} times; the firm's bound is ${maxVisits} (WORKFLOW_MAX_LOOP_ITERATIONS): the run stopped there.`,
    };
  }
  const day = new Date().toISOString().slice(0, 10);
  const key = redisKeys(services.config).workflowStepsOfDay(step.firm, day);
  // A set of step ids, not a counter: a retried step counts once.
  const [[, added], [, count]] = (await services.redis
    .multi()
    .sadd(key, step._id)
    .scard(key)
    .expire(key, 2 * 86_400)
    .exec()) as [[unknown, number], [unknown, number], unknown];
  const max = services.config.workflowMaxStepsPerDay;
  if (added === 1 && count > max) {
    await services.redis.srem(key, step._id);
    return {
      limit: 'steps_per_day',
      reason: `The firm's workflow runs took ${max} steps today, its bound (WORKFLOW_MAX_STEPS_PER_DAY): the run stopped before node "${step.node_id}".`,
    };
  }
  return null;
}

type StepRunOutcome = 'missing' | 'cancelled' | 'waiting' | StepStatus;

/** The workflowStep job. */
export async function runWorkflowStep(
  services: Services,
  job: { firm: string; runId: string; stepId: string },
  attempt: Attempt,
): Promise<StepRunOutcome> {
  const db = services.mongo.db;
  const [step, run] = await Promise.all([
    stepsCollection(db).findOne({ _id: job.stepId }),
    readRun(services, job.runId),
  ]);
  if (step === null || run === null || run.firm !== job.firm) return 'missing';
  const version = await loadVersion(db, run.version_id);
  if (version === null) return 'missing';
  if (FINISHED_STEP.has(step.status)) {
    await enqueueNextAgain(services, step);
    if (step.next.length === 0) await settleRun(services, run._id);
    return step.status;
  }
  if (run.status !== 'running') {
    await finishStep(services, version, step, {
      status: 'cancelled',
      result: { reason: `The run is ${run.status}.` },
    });
    return 'cancelled';
  }
  // A deleted workflow's runs under way stop at their next step (a day's wait included): nothing
  // of a workflow the firm removed, and can no longer see, goes on calling or mailing. (The
  // DELETE's own job cancels them at once, cancel-runs.ts; this stops one it has not reached.)
  if ((await readMeta(db, run.firm, run.workflow_id)) === null) {
    const reason = DELETED_REASON;
    await finishStep(services, version, step, {
      status: 'cancelled',
      result: { reason },
      endsRun: { status: 'cancelled', reason, limit: null },
    });
    return 'cancelled';
  }
  const node = version.graph.nodes.get(step.node_id);
  const type = node?.type;
  if (node === undefined || !isKnownType(type)) {
    // A node the service does not run (a note, a group: pure UI): kept, and passed through.
    await finishStep(services, version, step, {
      status: 'skipped',
      result: { reason: `Not a workflow node type (${JSON.stringify(type ?? null)}): kept and skipped.` },
    });
    return 'skipped';
  }
  if (step.status === 'waiting') {
    // A wait_for step's job ran again (a crash after it registered): its timeout is ensured.
    return (await ensureWaitTimeout(services, step)) ?? 'missing';
  }
  const bound = await boundHit(services, step);
  if (bound !== null) {
    await finishStep(services, version, step, {
      status: 'limited',
      result: { limit: bound.limit, reason: bound.reason },
      endsRun: { status: 'limited', reason: bound.reason, limit: bound.limit },
    });
    return 'limited';
  }
  const data = dataOf(node);
  const [event, firm] = await Promise.all([
    eventsCollection(services.mongo.db).findOne({ _id: run.event_id }),
    getFirm(db, run.firm),
  ]);
  if (event === null || firm === null) return 'missing';
  const lead = await readRunLead(services, run);
  const context = contextOf(
    {
      id: event._id,
      type: event.type,
      subject: event.subject,
      occurred_at: event.occurred_at,
      data: eventData(event),
    },
    lead,
    firm,
    { id: run.workflow_id, version: run.version, run_id: run._id },
  );

  switch (type) {
    case 'trigger.event':
      await finishStep(services, version, step, { status: 'done' });
      return 'done';
    case 'condition': {
      const branch = conditionsHold(data, 'self', context) ? 'true' : 'false';
      await finishStep(services, version, step, { status: 'done', branch, result: { branch } });
      return 'done';
    }
    case 'wait': {
      const due = waitDue(services, data, firm, lead?.timezone ?? null);
      await finishStep(services, version, step, {
        status: 'done',
        due_at: due.wall,
        result: { resume_at: due.logical.toISOString() },
      });
      return 'done';
    }
    case 'wait_for':
      return startWaitFor(services, run, step, data);
  }
  const matterFrom = matterOnPath(version.graph, step.path_visits.slice(0, -1), (node, n) =>
    stepIdOf(run._id, node, n),
  );
  return runAction(
    services,
    version,
    run,
    step,
    type,
    {
      firm,
      lead,
      data,
      context,
      causedBy: causedByWorkflows(event),
      ...(matterFrom === null ? {} : { matterFrom }),
    },
    attempt,
  );
}

/** When a `wait` ends: as the run sees it (logical) and as the job is delayed (wall). */
function waitDue(
  services: Services,
  data: Record<string, unknown>,
  firm: FirmDoc,
  leadZone: string | null,
): { logical: Date; wall: Date } {
  const now = clock.now();
  const minutes = clockMinutes(data.until);
  const logicalMs =
    minutes !== null
      ? nextLocalTime(now, minutes, leadZone ?? firm.settings.timezone) - now
      : (durationMs(data.duration) ?? 0);
  return { logical: new Date(now + logicalMs), wall: new Date(Date.now() + scaled(services, logicalMs)) };
}

async function startWaitFor(
  services: Services,
  run: WorkflowRunDoc,
  step: WorkflowStepDoc,
  data: Record<string, unknown>,
): Promise<StepRunOutcome> {
  const within = durationMs(data.within) ?? 0;
  const deadline = new Date(Date.now() + scaled(services, within));
  if (run.lead_id !== null) {
    await registerWaiter(services, run.firm, run.lead_id, {
      step_id: step._id,
      run_id: run._id,
      event: String(data.event),
      since: new Date(),
    });
  }
  const now = await withRunLock(services, run._id, async () => {
    await stepsCollection(services.mongo.db).updateOne(
      { _id: step._id, status: 'pending' },
      {
        $set: {
          status: 'waiting',
          due_at: deadline,
          started_at: new Date(),
          result: { waiting_for: String(data.event), until: new Date(clock.now() + within).toISOString() },
        },
      },
    );
    return addWaitTimeout(services, step._id);
  });
  if (now === 'waiting') return 'waiting';
  // Ended before it began to wait (its run cancelled meanwhile): it waits on its lead no more.
  if (run.lead_id !== null) await unregisterWaiter(services, run.firm, run.lead_id, step._id);
  return now ?? 'missing';
}

/**
 * A waiting `wait_for`'s timeout job, added under the run's lock while the step waits (a cancel
 * then removes it, or came first: nothing added). Returns the step's status (null: missing).
 */
function ensureWaitTimeout(services: Services, step: WorkflowStepDoc): Promise<StepStatus | null> {
  return withRunLock(services, step.run_id, () => addWaitTimeout(services, step._id));
}

/** ensureWaitTimeout's work, for a caller holding the run's lock. */
async function addWaitTimeout(services: Services, stepId: string): Promise<StepStatus | null> {
  const step = await stepsCollection(services.mongo.db).findOne({ _id: stepId });
  if (step === null || step.status !== 'waiting') return step?.status ?? null;
  await enqueue(
    services.queues,
    JOBS.workflowWaitTimeout,
    { firm: step.firm, runId: step.run_id, stepId: step._id },
    { delay: (step.due_at?.getTime() ?? Date.now()) - Date.now() },
  );
  return step.status;
}

/**
 * Ends a `wait_for` step: the event came (`matched`) or the time ran out (`timeout`). The first
 * to claim the step's resolution decides; a later one (the other of the two, a retry) finds it.
 */
export async function resolveWaitFor(
  services: Services,
  job: { firm: string; runId: string; stepId: string },
  outcome: 'matched' | 'timeout',
  eventId: string | null,
): Promise<void> {
  const db = services.mongo.db;
  await claim(resolutions(services), { _id: job.stepId, outcome, event_id: eventId, at: new Date() });
  const resolution = await resolutions(services).findOne({ _id: job.stepId });
  const [step, run] = await Promise.all([
    stepsCollection(db).findOne({ _id: job.stepId }),
    readRun(services, job.runId),
  ]);
  if (resolution === null || step === null || run === null || run.firm !== job.firm) return;
  if (run.lead_id !== null) await unregisterWaiter(services, run.firm, run.lead_id, step._id);
  const version = await loadVersion(db, run.version_id);
  if (version === null) return;
  if (FINISHED_STEP.has(step.status)) {
    await enqueueNextAgain(services, step);
    if (step.next.length === 0) await settleRun(services, run._id);
    return;
  }
  if (run.status !== 'running') {
    await finishStep(services, version, step, {
      status: 'cancelled',
      result: { reason: `The run is ${run.status}.` },
    });
    return;
  }
  await finishStep(services, version, step, {
    status: 'done',
    branch: resolution.outcome,
    result: { ...(step.result ?? {}), outcome: resolution.outcome, event_id: resolution.event_id },
  });
}

async function runAction(
  services: Services,
  version: LoadedVersion,
  run: WorkflowRunDoc,
  step: WorkflowStepDoc,
  type: ActionType,
  input: {
    firm: FirmDoc;
    lead: Awaited<ReturnType<typeof readLead>>;
    data: Record<string, unknown>;
    context: ReturnType<typeof contextOf>;
    matterFrom?: MatterFrom;
    causedBy?: readonly string[];
  },
  attempt: Attempt,
): Promise<StepRunOutcome> {
  if (!isAction(type)) return 'skipped';
  const action = ACTIONS[type];
  const base = { services, ...input, stepId: step._id };
  try {
    const boundMs = action.boundMs?.(services.config);
    const record = await runEffect(
      stepSubject(services, step),
      { ...action.effect, path: 'effect', ...(boundMs === undefined ? {} : { boundMs }) },
      attempt,
      async (signal) => {
        const preview = await action.preview(base);
        if (preview.skip !== undefined) return { state: 'skipped', result: { reason: preview.skip } };
        return action.perform({ ...base, step, attempt, would: preview.would, signal });
      },
    );
    const blocked = record.result !== null && typeof record.result.blocked === 'string';
    await finishStep(services, version, step, {
      status: blocked ? 'blocked' : record.state === 'skipped' ? 'skipped' : 'done',
      result: record.result,
    });
    return blocked ? 'blocked' : record.state === 'skipped' ? 'skipped' : 'done';
  } catch (err) {
    if (!(attempt.lastAttempt || isFinalActionFailure(type, err))) throw err;
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 500);
    await finishStep(services, version, step, {
      status: 'failed',
      error: message,
      endsRun: {
        status: 'failed',
        reason: `The step of node "${step.node_id}" (${type}) failed: ${message}`,
        limit: null,
      },
    });
    return 'failed';
  }
}

export const FINISHED: ReadonlySet<string> = FINISHED_STEP;
