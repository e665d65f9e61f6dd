import type { Static } from '@sinclair/typebox';
import type { WorkflowDoc } from '../../../core/domain/workflows/workflows.js';
import type { WorkflowRunDoc, WorkflowStepDoc } from '../../../core/domain/workflows/runs/run-store.js';
import type {
  CreateWorkflowResponse,
  WorkflowRunRecord,
  WorkflowRunSummary,
  WorkflowStepRecord,
} from './schema.js';

/**
 * A workflow as the API shows it (WorkflowRecord), as JSON text: {id, name, firmSlug, nodes,
 * edges, created_at, updated_at}. The stored graph text came from JSON.stringify, so it is
 * spliced in as it is (docs/workflows.md): graphs of megabytes are not parsed to be sent.
 */
export function workflowJson(doc: WorkflowDoc): string {
  const text = JSON.stringify;
  return (
    `{"id":${text(doc._id)},"name":${text(doc.name)},"firmSlug":${text(doc.firm)},` +
    `"nodes":${doc.nodes_json},"edges":${doc.edges_json},` +
    `"created_at":${text(doc.created_at.toISOString())},"updated_at":${text(doc.updated_at.toISOString())}}`
  );
}

export const workflowListJson = (docs: WorkflowDoc[]): string => `[${docs.map(workflowJson).join(',')}]`;

/** A workflow just stored, as creating it answers. */
export function createdWorkflowView(
  doc: Pick<WorkflowDoc, '_id' | 'name'>,
): Static<typeof CreateWorkflowResponse> {
  return { id: doc._id, name: doc.name };
}

const iso = (d: Date | null | undefined): string | null =>
  d === null || d === undefined ? null : new Date(d).toISOString();

/** A run as the API shows it, without its steps (the runs list). */
export function runSummaryView(run: WorkflowRunDoc): Static<typeof WorkflowRunSummary> {
  return {
    id: run._id,
    workflow_id: run.workflow_id,
    version: run.version,
    status: run.status,
    status_reason: run.status_reason,
    limit: run.limit,
    event: { id: run.event_id, type: run.event_type, subject: run.subject },
    lead_id: run.lead_id,
    started_at: run.started_at.toISOString(),
    finished_at: iso(run.finished_at),
  };
}

export function stepView(step: WorkflowStepDoc): Static<typeof WorkflowStepRecord> {
  const effect = step.effect;
  return {
    id: step._id,
    node_id: step.node_id,
    type: step.node_type,
    visit: step.visit,
    status: step.status,
    branch: step.branch,
    attempts: effect?.attempts ?? 0,
    started_at: iso(step.started_at ?? effect?.started_at ?? null),
    finished_at: iso(step.finished_at),
    result: step.result,
    error: step.error ?? effect?.last_error ?? null,
  };
}

export const runView = (run: WorkflowRunDoc, steps: WorkflowStepDoc[]): Static<typeof WorkflowRunRecord> => ({
  ...runSummaryView(run),
  steps: steps.map(stepView),
});
