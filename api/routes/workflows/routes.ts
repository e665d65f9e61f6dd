import { Type, type Static } from '@sinclair/typebox';
import type { Context } from 'koa';
import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import type { ApiPrincipal } from '../../../core/domain/access/principal.js';
import {
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  getWorkflowMeta,
  listWorkflows,
  updateWorkflow,
  workflowOwner,
} from '../../../core/domain/workflows/workflows.js';
import { invalidRequest, notFound, quote } from '../../../core/platform/errors.js';
import { activateWorkflow, deactivateWorkflow } from '../../../core/domain/workflows/versions.js';
import { firmOfRunId } from '../../../core/domain/workflows/runs/run-store.js';
import { findRun, listRuns, stepsOf } from '../../../core/domain/workflows/runs/run-reads.js';
import { dryRunWorkflow } from '../../../core/domain/workflows/runs/dry-run.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import type { WorkflowEdge, WorkflowNode } from '../../../core/domain/workflows/graph.js';
import { defineRoute } from '../../route.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import { createdWorkflowView, runSummaryView, runView, workflowJson, workflowListJson } from './present.js';
import {
  CreateWorkflowBody,
  ActivationResponse,
  CreateWorkflowResponse,
  DeleteWorkflowResponse,
  DryRunBody,
  DryRunResponse,
  ListRunsQuery,
  ListRunsResponse,
  NoBody,
  RunParams,
  WorkflowRunRecord,
  ListWorkflowsQuery,
  UpdateWorkflowBody,
  WorkflowParams,
  WorkflowRecord,
} from './schema.js';

const tag = 'Workflows';

/** The firm of the workflow an id names, if the principal may see it (404 before any read otherwise). */
const workflowFirm = (principal: ApiPrincipal, id: string): string =>
  requireRecord(principal, workflowOwner(id), 'workflow').firm;

/** Answers with JSON text built by the domain (stored graphs are spliced in, not re-parsed). */
function sendJsonText(koa: Context, text: string): undefined {
  koa.status = 200;
  koa.type = 'application/json';
  koa.body = text;
  return undefined;
}

export const workflowRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/workflows',
    operationId: 'createWorkflow',
    summary:
      'Store a flow-builder graph: nodes {id, type, position, data} with unique ids, edges {id, source, target, ...} between them; other fields kept exactly as sent',
    tag,
    auth: { kind: 'token' },
    // Nodes and edges are stored as JSON text: NUL and "__proto__" keys are safe there (the name,
    // a document field, refuses NUL in its schema).
    verbatimJson: true,
    body: CreateWorkflowBody,
    response: CreateWorkflowResponse,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body }) => {
      const { firmSlug, ...input } = body;
      await requireFirm(services.mongo.db, principal, firmSlug);
      return createdWorkflowView(await createWorkflow(services, firmSlug, input));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/workflows',
    operationId: 'listWorkflows',
    summary:
      "A firm's workflows, most recently updated first (?firmSlug=, required with the platform key); X-Next-Cursor continues the list",
    tag,
    auth: { kind: 'token' },
    query: ListWorkflowsQuery,
    response: Type.Array(WorkflowRecord),
    responseHeaders: {
      'X-Next-Cursor': {
        description: 'Present when more workflows follow: send it back as ?cursor= for the next page',
        schema: Type.String(),
      },
    },
    errors: [403, 404],
    handler: async ({ services, principal, query, koa }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listWorkflows(services, firm._id, query.limit, query.cursor);
      if (page.next_cursor !== undefined) koa.set('X-Next-Cursor', page.next_cursor);
      return sendJsonText(koa, workflowListJson(page.workflows));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/workflows/{id}',
    operationId: 'getWorkflow',
    summary: 'Read a workflow',
    tag,
    auth: { kind: 'token' },
    params: WorkflowParams,
    response: WorkflowRecord,
    errors: [404],
    handler: async ({ services, principal, params, koa }) =>
      sendJsonText(
        koa,
        workflowJson(await getWorkflow(services.mongo.db, workflowFirm(principal, params.id), params.id)),
      ),
  }),
  defineRoute({
    method: 'PUT',
    path: '/api/workflows/{id}',
    operationId: 'updateWorkflow',
    summary:
      'Replace the name, nodes and edges of a workflow (same rules as create); updated_at moves, created_at stays; concurrent writes: the last wins whole',
    tag,
    auth: { kind: 'token' },
    verbatimJson: true,
    params: WorkflowParams,
    body: UpdateWorkflowBody,
    response: WorkflowRecord,
    errors: [403, 404],
    handler: async ({ services, principal, params, body, koa }) => {
      const db = services.mongo.db;
      const { firmSlug, ...input } = body;
      // A firm token naming another firm is refused before anything is looked up.
      if (firmSlug !== undefined) await requireFirm(db, principal, firmSlug);
      const workflow = await getWorkflowMeta(db, workflowFirm(principal, params.id), params.id);
      if (firmSlug !== undefined && firmSlug !== workflow.firm) {
        throw invalidRequest(
          `A workflow stays in its firm (${quote(workflow.firm)}); leave firmSlug out or send that one.`,
          [{ path: '/firmSlug', message: 'is not the firm of this workflow' }],
        );
      }
      return sendJsonText(koa, workflowJson(await updateWorkflow(services, workflow, input)));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/workflows/{id}',
    operationId: 'deleteWorkflow',
    summary: 'Delete a workflow (then it is 404)',
    tag,
    auth: { kind: 'token' },
    params: WorkflowParams,
    response: DeleteWorkflowResponse,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const workflow = await getWorkflowMeta(
        services.mongo.db,
        workflowFirm(principal, params.id),
        params.id,
      );
      await deleteWorkflow(services, workflow);
      // Its runs under way end cancelled now, those parked in a wait too (not at their timer).
      await enqueue(services.queues, JOBS.workflowCancelRuns, {
        firm: workflow.firm,
        workflowId: workflow._id,
      });
      return { id: workflow._id, deleted: true };
    },
  }),
  ...(['activate', 'deactivate'] as const).map((action) =>
    defineRoute({
      method: 'POST',
      path: `/api/workflows/{id}/${action}`,
      operationId: `${action}Workflow`,
      summary:
        action === 'activate'
          ? 'Run the workflow on its triggers from now on: 400 naming each node that keeps it from running (no trigger, a cycle without a wait, an action missing a field); a changed graph becomes a new version'
          : 'Stop starting runs of the workflow (runs under way go on with their version)',
      tag,
      auth: { kind: 'token' },
      params: WorkflowParams,
      body: NoBody,
      response: ActivationResponse,
      errors: [404],
      handler: async ({ services, principal, params }) => {
        const workflow = await getWorkflowMeta(
          services.mongo.db,
          workflowFirm(principal, params.id),
          params.id,
        );
        return action === 'activate'
          ? activateWorkflow(services, workflow)
          : deactivateWorkflow(services, workflow);
      },
    }),
  ),
  defineRoute({
    method: 'GET',
    path: '/api/workflows/{id}/runs',
    operationId: 'listWorkflowRuns',
    summary: "A workflow's runs, newest first (keyset pages: next_cursor)",
    tag,
    auth: { kind: 'token' },
    params: WorkflowParams,
    query: ListRunsQuery,
    response: ListRunsResponse,
    errors: [404],
    handler: async ({ services, principal, params, query }) => {
      const workflow = await getWorkflowMeta(
        services.mongo.db,
        workflowFirm(principal, params.id),
        params.id,
      );
      const page = await listRuns(services, workflow.firm, workflow._id, query.limit, query.cursor);
      return { runs: page.runs.map(runSummaryView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/workflow-runs/{id}',
    operationId: 'getWorkflowRun',
    summary: 'One workflow run with each of its steps: status, started/finished, result or error',
    tag,
    auth: { kind: 'token' },
    params: RunParams,
    response: WorkflowRunRecord,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const firm = firmOfRunId(params.id);
      const owner = requireRecord(principal, firm === undefined ? null : { firm }, 'workflow_run');
      const run = await findRun(services, owner.firm, params.id);
      if (run === null) throw notFound('workflow_run');
      return runView(run, await stepsOf(services, run));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/workflows/{id}/dry-run',
    operationId: 'dryRunWorkflow',
    summary:
      'Walk the workflow (as saved now) for an event without any effect: the path it would take and what each action would send',
    tag,
    auth: { kind: 'token' },
    params: WorkflowParams,
    body: DryRunBody,
    response: DryRunResponse,
    errors: [404],
    handler: async ({ services, principal, params, body }) => {
      const db = services.mongo.db;
      const doc = await getWorkflow(db, workflowFirm(principal, params.id), params.id);
      const firm = await getFirm(db, doc.firm);
      if (firm === null) throw notFound('workflow');
      // would_send is each action's own shape (an object the schema leaves open).
      return (await dryRunWorkflow(
        services,
        firm,
        {
          _id: doc._id,
          nodes: JSON.parse(doc.nodes_json) as WorkflowNode[],
          edges: JSON.parse(doc.edges_json) as WorkflowEdge[],
        },
        body.event,
        body.wait_for ?? 'timeout',
      )) as Static<typeof DryRunResponse>;
    },
  }),
];
