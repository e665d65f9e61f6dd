import { Type } from '@sinclair/typebox';
import { MAX_EDGES, MAX_NODES } from '../../../core/domain/workflows/graph.js';
import { Body, Cursor, FirmSlug, Id, Limit, ListFirmSlug, Timestamp } from '../../schemas/common.js';

// Nodes and edges in the flow-builder (React Flow / xyflow) shape. Only the fields the service
// relies on are checked; every other field (width, height, selected, dragging, style,
// markerEnd, nested data, nulls, any key at all) is stored and returned exactly as sent.

/** A node id as an edge's source or target. */
const NodeRef = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'The id of a node of this workflow',
});

/** FirmSlug, with a description of its own. */
const firmSlugDescribed = (description: string) =>
  Type.String({ pattern: FirmSlug.pattern, maxLength: FirmSlug.maxLength, description });

export const WorkflowNode = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256, description: 'Unique among the nodes of the workflow' }),
    type: Type.Optional(Type.String({ description: 'The node type of the flow builder' })),
    position: Type.Optional(
      Type.Object({ x: Type.Number(), y: Type.Number() }, { additionalProperties: true }),
    ),
    data: Type.Optional(Type.Object({}, { additionalProperties: true, description: "The node's own data" })),
  },
  {
    additionalProperties: true,
    description:
      'A flow-builder node {id, type, position: {x, y}, data}; other fields are kept exactly as sent',
  },
);

export const WorkflowEdge = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256, description: 'Unique among the edges of the workflow' }),
    source: NodeRef,
    target: NodeRef,
    // Other fields of the edge, stored as given whatever their JSON value: a condition's branch
    // is the edge whose sourceHandle is the string "true" or "false" (checked on activation).
    sourceHandle: Type.Optional(
      Type.Unknown({ description: 'The handle the edge leaves from; any JSON value, kept as sent' }),
    ),
    targetHandle: Type.Optional(
      Type.Unknown({ description: 'The handle the edge enters; any JSON value, kept as sent' }),
    ),
    label: Type.Optional(Type.Unknown({ description: "The edge's label; any JSON value, kept as sent" })),
  },
  {
    additionalProperties: true,
    description: 'A flow-builder edge {id, source, target, ...}; other fields are kept exactly as sent',
  },
);

const Nodes = Type.Array(WorkflowNode, {
  maxItems: MAX_NODES,
  description: `At most ${MAX_NODES}; ids unique (a repeat is 400 invalid_request)`,
  // No two items share an id (JSON Schema has no keyword for it; scripts/fuzz/hooks.py reads this).
  'x-unique-by': 'id',
});

const Edges = Type.Array(WorkflowEdge, {
  maxItems: MAX_EDGES,
  description: `At most ${MAX_EDGES}; ids unique, source and target name nodes of this workflow (else 400)`,
  'x-unique-by': 'id',
  // Each edge's source and target are ids of the body's nodes (scripts/fuzz/hooks.py reads this).
  'x-edges-of': 'nodes',
});

// The name is stored as a document field, where NUL cannot go (the route accepts NUL only in
// nodes and edges, which are stored as JSON text).
const WorkflowName = Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000]*$' });

export const CreateWorkflowBody = Body({
  firmSlug: FirmSlug,
  name: WorkflowName,
  nodes: Nodes,
  edges: Edges,
});

export const UpdateWorkflowBody = Body({
  firmSlug: Type.Optional(
    firmSlugDescribed("The workflow's own firm, if sent: a workflow never moves to another firm (400)"),
  ),
  name: WorkflowName,
  nodes: Nodes,
  edges: Edges,
});

export const WorkflowParams = Type.Object({ id: Id });

export const ListWorkflowsQuery = Type.Object({
  firmSlug: ListFirmSlug,
  limit: Limit(500, 100, 'At most this many workflows (fewer once a page holds 16 MiB of graphs)'),
  cursor: Cursor('The X-Next-Cursor header of the previous page'),
});

export const WorkflowRecord = Type.Object({
  id: Type.String(),
  name: Type.String(),
  firmSlug: Type.String(),
  nodes: Type.Array(WorkflowNode),
  edges: Type.Array(WorkflowEdge),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreateWorkflowResponse = Type.Object({ id: Type.String(), name: Type.String() });
export const DeleteWorkflowResponse = Type.Object({ id: Type.String(), deleted: Type.Boolean() });

// Activation, runs and the dry run (docs/workflows.md#runs).

export const NoBody = Body({});

export const ActivationResponse = Type.Object({
  id: Type.String(),
  active: Type.Boolean(),
  version: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'The version new runs start with (each activation of a changed graph, and each edit while active, makes one)',
  }),
});

const RunStatus = Type.Union(
  ['running', 'completed', 'failed', 'limited', 'cancelled'].map((s) => Type.Literal(s)),
);
const StepStatus = Type.Union(
  ['pending', 'waiting', 'done', 'skipped', 'blocked', 'failed', 'limited', 'cancelled'].map((s) =>
    Type.Literal(s),
  ),
);
const Nullable = <T extends import('@sinclair/typebox').TSchema>(schema: T) =>
  Type.Union([schema, Type.Null()]);
const AnyObject = Type.Object({}, { additionalProperties: true });

export const WorkflowStepRecord = Type.Object({
  id: Type.String(),
  node_id: Type.String(),
  type: Nullable(Type.String()),
  visit: Type.Integer({
    description: 'How many times the run has entered this node on its path (1 the first time)',
  }),
  status: StepStatus,
  branch: Nullable(Type.String()),
  attempts: Type.Integer({ description: "Attempts of the step's outside effect (0 for control nodes)" }),
  started_at: Nullable(Timestamp),
  finished_at: Nullable(Timestamp),
  result: Nullable(AnyObject),
  error: Nullable(Type.String()),
});

const RunFields = {
  id: Type.String(),
  workflow_id: Type.String(),
  version: Type.Integer(),
  status: RunStatus,
  status_reason: Nullable(Type.String()),
  limit: Nullable(
    Type.Union([
      Type.Literal('concurrent_runs'),
      Type.Literal('steps_per_day'),
      Type.Literal('loop_iterations'),
    ]),
  ),
  event: Type.Object({ id: Type.String(), type: Type.String(), subject: Type.String() }),
  lead_id: Nullable(Type.String()),
  started_at: Timestamp,
  finished_at: Nullable(Timestamp),
};

export const WorkflowRunSummary = Type.Object(RunFields);
export const WorkflowRunRecord = Type.Object({ ...RunFields, steps: Type.Array(WorkflowStepRecord) });

export const ListRunsQuery = Type.Object({
  limit: Limit(200, 50, 'At most this many runs'),
  cursor: Cursor('The next_cursor of the previous page'),
});

export const ListRunsResponse = Type.Object({
  runs: Type.Array(WorkflowRunSummary),
  next_cursor: Type.String({ description: '"" on the last page' }),
});

export const RunParams = Type.Object({ id: Id });

export const DryRunBody = Body({
  event: Type.Object(
    {
      type: Type.String({ minLength: 1, maxLength: 64, description: 'The event type, e.g. call.analyzed' }),
      subject: Type.Optional(
        Type.String({ maxLength: 256, description: "The record it is about (a lead's id reads that lead)" }),
      ),
      occurred_at: Type.Optional(Timestamp),
      data: Type.Optional(Type.Object({}, { additionalProperties: true, description: "The event's data" })),
    },
    { additionalProperties: false },
  ),
  wait_for: Type.Optional(
    Type.Union([Type.Literal('matched'), Type.Literal('timeout')], {
      description: 'The branch `wait_for` nodes take (default timeout: no event comes in a dry run)',
    }),
  ),
});

export const DryRunResponse = Type.Object({
  workflow_id: Type.String(),
  matched: Type.Boolean({ description: 'A trigger of the workflow matches the event (type and filter)' }),
  trigger: Nullable(Type.String()),
  path: Type.Array(
    Type.Object({
      node_id: Type.String(),
      type: Nullable(Type.String()),
      visit: Type.Integer(),
      outcome: Type.Union(
        ['would_run', 'passes', 'skipped', 'blocked', 'limited'].map((s) => Type.Literal(s)),
      ),
      branch: Type.Optional(Type.String()),
      wait: Type.Optional(
        Type.Object({
          for_ms: Type.Optional(Type.Integer()),
          until: Type.Optional(Type.String()),
          event: Type.Optional(Type.String()),
          within_ms: Type.Optional(Type.Integer()),
        }),
      ),
      would_send: Type.Optional(AnyObject),
      reason: Type.Optional(Type.String()),
    }),
  ),
});
