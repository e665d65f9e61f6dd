import { createHash } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import type { Db } from 'mongodb';
import type { Services } from '../../../wiring/services.js';
import { COLLECTIONS, collection } from '../../../platform/db/collections.js';
import type {
  EffectLeaseDoc,
  EffectRecord,
  EffectSubject,
  EffectSubjectDoc,
  EffectTiming,
} from '../../../platform/db/effect-records.js';
import { redisKeys } from '../../../platform/redis-keys.js';
import { withRecordLock } from '../../../platform/redis-mutex.js';

// A run is data (docs/workflows.md#runs): one run document per (workflow version, triggering
// event), whose _id is derived from that pair, so starting it is a claim; one step document per
// node the run enters (`<run id>|<node id>|<visit>`), created by the step before it, each with the
// record of its outside effect. Every write of a run's documents takes the run's lock (FerretDB
// rewrites whole documents: writers of one document take turns).

export const RUN_STATUSES = ['running', 'completed', 'failed', 'limited', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export type RunLimit = 'concurrent_runs' | 'steps_per_day' | 'loop_iterations';

export const STEP_STATUSES = [
  'pending',
  'waiting',
  'done',
  'skipped',
  'blocked',
  'failed',
  'limited',
  'cancelled',
] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface WorkflowRunDoc {
  _id: string;
  firm: string;
  workflow_id: string;
  version: number;
  version_id: string;
  event_id: string;
  event_type: string;
  subject: string;
  /** The lead the event is about (its subject, or its data's lead_id); null when none. */
  lead_id: string | null;
  trigger_node: string;
  status: RunStatus;
  /** Why the run ended other than completed, in a sentence (a bound hit, a failed step). */
  status_reason: string | null;
  limit: RunLimit | null;
  step_ids: string[];
  started_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface WorkflowStepDoc {
  _id: string;
  run_id: string;
  firm: string;
  node_id: string;
  node_type: string | null;
  /** How many times the run has entered this node on the path to this step (1 the first time). */
  visit: number;
  /** The visits of every node on the path to this step, for the next steps' visits. */
  path_visits: Array<{ node: string; n: number }>;
  status: StepStatus;
  /** The branch taken (`true`/`false`, `matched`/`timeout`); null for nodes that do not branch. */
  branch: string | null;
  /** The steps created after this one. */
  next: string[];
  /** When the next steps are due (a `wait`), or the `wait_for` timeout (wall clock). */
  due_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  result: Record<string, unknown> | null;
  error: string | null;
  /** The action's outside effect (core/platform/db/effect-recorder.ts). */
  effect?: EffectRecord;
  clio_contact?: EffectRecord;
  created_at: Date;
}

export const FINISHED_STEP: ReadonlySet<StepStatus> = new Set([
  'done',
  'skipped',
  'blocked',
  'failed',
  'limited',
  'cancelled',
]);

export const runsCollection = (db: Db) => collection<WorkflowRunDoc>(db, COLLECTIONS.workflowRuns);
export const stepsCollection = (db: Db) => collection<WorkflowStepDoc>(db, COLLECTIONS.workflowSteps);

const digest = (text: string, n: number) => createHash('sha256').update(text).digest('hex').slice(0, n);

/**
 * The run of a workflow for an event: `wfr_<firm>_<digest>`, so a read by id knows its firm. One
 * per (workflow, event), whatever version is active when the event is fanned out: an event
 * recorded again after an edit starts no second run. (Runs started before 2026-12-02 were keyed
 * by the version.)
 */
export const runIdOf = (firm: string, workflowId: string, eventId: string): string =>
  `wfr_${firm}_${digest(`${workflowId}|${eventId}`, 24)}`;

/** The firm a run id names; undefined when the text is no run id. */
export function firmOfRunId(id: string): string | undefined {
  const m = /^wfr_([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)_[0-9a-f]{24}$/.exec(id);
  return m === null ? undefined : m[1];
}

export const stepIdOf = (runId: string, nodeId: string, visit: number): string =>
  `${runId}|${nodeId}|${visit}`;

/** A short digest of a step, for ids sent outside (mail Message-IDs, Clio references). */
export const stepDigest = (stepId: string): string => digest(stepId, 24);

export function withRunLock<T>(services: Services, runId: string, fn: () => Promise<T>): Promise<T> {
  return withRecordLock(services.redis, redisKeys(services.config).workflowRunLock(runId), fn, {
    ttlMs: services.config.callLockMs,
  });
}

/** A step as the subject of its effects: written under the run's lock, with a lease. */
export function stepSubject(services: Services, step: { _id: string; run_id: string }): EffectSubject {
  return {
    collection: services.mongo.db.collection<EffectSubjectDoc>(COLLECTIONS.workflowSteps),
    id: step._id,
    exclusive: (write) => withRunLock(services, step.run_id, write),
    lease: {
      collection: services.mongo.db.collection<EffectLeaseDoc>(COLLECTIONS.effectLeases),
      ms: services.config.effectLeaseMs,
      clockMarginMs: services.config.effectLeaseClockMarginMs,
    },
    ...(services.config.effectTimingFile === undefined
      ? {}
      : { observe: timingTo(services.config.effectTimingFile) }),
  };
}

/** Appends each effect's timing as a JSON line (EFFECT_TIMING_FILE: measurements only). */
function timingTo(file: string): (timing: EffectTiming) => void {
  return (timing) =>
    void appendFile(file, `${JSON.stringify({ pid: process.pid, ...timing })}\n`).catch(() => undefined);
}

export function newStep(
  run: { _id: string; firm: string },
  nodeId: string,
  nodeType: string | null,
  pathVisits: Array<{ node: string; n: number }>,
): WorkflowStepDoc {
  const visit = (pathVisits.find((v) => v.node === nodeId)?.n ?? 0) + 1;
  return {
    _id: stepIdOf(run._id, nodeId, visit),
    run_id: run._id,
    firm: run.firm,
    node_id: nodeId,
    node_type: nodeType,
    visit,
    path_visits: [...pathVisits.filter((v) => v.node !== nodeId), { node: nodeId, n: visit }],
    status: 'pending',
    branch: null,
    next: [],
    due_at: null,
    started_at: null,
    finished_at: null,
    result: null,
    error: null,
    created_at: new Date(),
  };
}
