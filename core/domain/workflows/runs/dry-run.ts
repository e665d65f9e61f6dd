import type { Services } from '../../../wiring/services.js';
import { clock } from '../../../platform/clock.js';
import type { FirmDoc } from '../../firms/firms.js';
import { decideDial } from '../../compliance/dial-gate.js';
import { conditionsHold } from '../expressions.js';
import type { WorkflowEdge, WorkflowNode } from '../graph.js';
import {
  clockMinutes,
  dataOf,
  durationMs,
  eventMatches,
  isAction,
  isKnownType,
  nextEdges,
  runnableGraph,
} from '../vocabulary.js';
import { ACTIONS, matterOnPath } from './actions.js';
import { contextOf, leadIdOf, readLead } from './context.js';

// The dry run (POST /api/workflows/{id}/dry-run): the graph as saved now, walked for a given event
// with no effect at all — nothing is sent, stored or enqueued. It returns the path a run would
// take and, for each action, what it would send (or why it would be skipped; a call the dial gate
// would refuse says so, judged without being recorded). A `wait_for` takes the branch asked for
// (default `timeout`: no event comes during a dry run).

export interface DryRunEvent {
  type: string;
  subject?: string;
  occurred_at?: string;
  data?: Record<string, unknown>;
}

export interface DryRunStep {
  node_id: string;
  type: string | null;
  visit: number;
  /** `would_run` (an action), `passes` (control nodes), `skipped` (unknown type or nothing to do), `blocked`, `limited`. */
  outcome: 'would_run' | 'passes' | 'skipped' | 'blocked' | 'limited';
  branch?: string;
  wait?: { for_ms?: number; until?: string; event?: string; within_ms?: number };
  would_send?: Record<string, unknown>;
  reason?: string;
}

export interface DryRunResult {
  workflow_id: string;
  matched: boolean;
  trigger: string | null;
  path: DryRunStep[];
}

/** At most this many steps are walked (a cycle through a `wait` stops at the loop bound first). */
const MAX_DRY_STEPS = 500;

export async function dryRunWorkflow(
  services: Services,
  firm: FirmDoc,
  workflow: { _id: string; nodes: WorkflowNode[]; edges: WorkflowEdge[] },
  event: DryRunEvent,
  waitFor: 'matched' | 'timeout',
): Promise<DryRunResult> {
  const graph = runnableGraph(workflow.nodes, workflow.edges);
  const data = event.data ?? {};
  const trigger = graph.triggers.find((node) => {
    const d = dataOf(node);
    return (
      typeof d.event === 'string' && eventMatches(d.event, event.type) && conditionsHold(d, 'filter', data)
    );
  });
  if (trigger === undefined) return { workflow_id: workflow._id, matched: false, trigger: null, path: [] };

  const subject = event.subject ?? '';
  const lead = await readLead(services.mongo.db, firm._id, leadIdOf({ subject, data }));
  const context = contextOf(
    {
      id: 'evt_dry_run',
      type: event.type,
      subject,
      occurred_at: event.occurred_at === undefined ? new Date(clock.now()) : new Date(event.occurred_at),
      data,
    },
    lead,
    firm,
    { id: workflow._id, version: null, run_id: null },
  );
  const maxVisits = services.config.workflowMaxLoopIterations;
  const path: DryRunStep[] = [];
  // Breadth first, as a run's parallel branches would go; each entry carries its path's visits.
  const queue: Array<{ id: string; visits: Map<string, number> }> = [{ id: trigger.id, visits: new Map() }];
  while (queue.length > 0 && path.length < MAX_DRY_STEPS) {
    const { id, visits: before } = queue.shift()!;
    const node = graph.nodes.get(id)!;
    const visit = (before.get(id) ?? 0) + 1;
    const visits = new Map(before).set(id, visit);
    const type = typeof node.type === 'string' ? node.type : null;
    const step: DryRunStep = { node_id: id, type, visit, outcome: 'passes' };
    path.push(step);
    if (visit > maxVisits) {
      step.outcome = 'limited';
      step.reason = `The run would enter this node a ${visit}th time; the bound is ${maxVisits} (WORKFLOW_MAX_LOOP_ITERATIONS): it stops here.`;
      continue;
    }
    const d = dataOf(node);
    let branch: string | null = null;
    if (!isKnownType(type)) {
      step.outcome = 'skipped';
      step.reason = 'Not a workflow node type: kept and skipped.';
    } else if (type === 'condition') {
      branch = conditionsHold(d, 'self', context) ? 'true' : 'false';
    } else if (type === 'wait') {
      const minutes = clockMinutes(d.until);
      step.wait = minutes === null ? { for_ms: durationMs(d.duration) ?? 0 } : { until: String(d.until) };
    } else if (type === 'wait_for') {
      branch = waitFor;
      step.wait = { event: String(d.event), within_ms: durationMs(d.within) ?? 0 };
    } else if (isAction(type)) {
      const matterFrom = matterOnPath(
        graph,
        [...before].map(([node, n]) => ({ node, n })),
        null,
      );
      const preview = await ACTIONS[type].preview({
        services,
        firm,
        lead,
        data: d,
        context,
        stepId: `dry|${id}|${visit}`,
        ...(matterFrom === null ? {} : { matterFrom }),
      });
      step.would_send = preview.would;
      step.outcome = preview.skip === undefined ? 'would_run' : 'skipped';
      if (preview.skip !== undefined) step.reason = preview.skip;
      if (type === 'call' && preview.skip === undefined) {
        const judged = await decideDial(services, {
          firm,
          phone: String(preview.would.to_number),
          leadTimeZone: lead?.timezone ?? null,
          callId: String(preview.would.call_id),
          stage: 'request',
        });
        if (judged.decision.answer === 'block') {
          step.outcome = 'blocked';
          step.reason = `The dial gate would refuse it (${judged.decision.reason}): ${judged.decision.message}`;
        }
      }
    }
    if (branch !== null) step.branch = branch;
    if (step.outcome === 'blocked') continue;
    for (const edge of nextEdges(graph, node, branch)) {
      if (graph.nodes.has(edge.target)) queue.push({ id: edge.target, visits });
    }
  }
  return { workflow_id: workflow._id, matched: true, trigger: trigger.id, path };
}
