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
    sourceHandle: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    targetHandle: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    label: Type.Optional(Type.Union([Type.String(), Type.Number(), Type.Null()])),
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
