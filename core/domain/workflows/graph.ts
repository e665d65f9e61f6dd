import { clip, invalidRequest, quote, type ErrorDetail } from '../../platform/errors.js';

// The rules of a workflow's graph that its JSON Schema cannot state: node ids and edge ids are
// unique, every edge joins two nodes of the same workflow, and every number can be written back
// as it came (the graph is stored as JSON text, see workflows.ts). The request schema has
// already checked the shapes: nodes and edges are objects with string ids, and so on.

export const MAX_NODES = 500;
export const MAX_EDGES = 2000;

/** A flow-builder (React Flow) node: `id` is ours to check; every other field is the client's. */
export interface WorkflowNode {
  id: string;
  [field: string]: unknown;
}

/** A flow-builder edge between two nodes of the same workflow. */
export interface WorkflowEdge {
  id: string;
  source: string;
  target: string;
  [field: string]: unknown;
}

/** A key as one JSON-pointer token (RFC 6901). */
const pointerToken = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Pointers to numbers inside `value` that JSON.parse read as ±Infinity (an exponent past the
 * double range, e.g. 1e400): written back they would become null, so they are refused instead.
 * The body middleware has capped nesting at 64 levels, so recursion is bounded.
 */
function unrepresentableNumbers(value: unknown, pointer: string, out: string[]): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) out.push(pointer);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => unrepresentableNumbers(item, `${pointer}/${i}`, out));
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      unrepresentableNumbers(item, `${pointer}/${pointerToken(key)}`, out);
    }
  }
}

/** Every problem of the graph, each naming the node or edge by JSON pointer and by id. */
export function graphProblems(nodes: WorkflowNode[], edges: WorkflowEdge[]): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  // Maps, not objects: an id such as "__proto__" or "constructor" is an ordinary id.
  const nodeIndex = new Map<string, number>();
  nodes.forEach((node, i) => {
    const first = nodeIndex.get(node.id);
    if (first === undefined) nodeIndex.set(node.id, i);
    else {
      problems.push({
        path: `/nodes/${i}/id`,
        message: `repeats the node id ${quote(node.id)} of /nodes/${first}; node ids must be unique`,
      });
    }
  });
  const edgeIndex = new Map<string, number>();
  edges.forEach((edge, i) => {
    const first = edgeIndex.get(edge.id);
    if (first === undefined) edgeIndex.set(edge.id, i);
    else {
      problems.push({
        path: `/edges/${i}/id`,
        message: `repeats the edge id ${quote(edge.id)} of /edges/${first}; edge ids must be unique`,
      });
    }
    for (const end of ['source', 'target'] as const) {
      if (!nodeIndex.has(edge[end])) {
        problems.push({
          path: `/edges/${i}/${end}`,
          message: `names no node of this workflow: ${quote(edge[end])} (edge ${quote(edge.id)})`,
        });
      }
    }
  });
  for (const [kind, items] of [
    ['node', nodes],
    ['edge', edges],
  ] as const) {
    items.forEach((item, i) => {
      const pointers: string[] = [];
      unrepresentableNumbers(item, `/${kind}s/${i}`, pointers);
      for (const path of pointers) {
        problems.push({
          // The pointer is made of the client's keys: clipped like any echoed request value.
          path: clip(path),
          message: `is a number outside the range JSON numbers can round-trip (about ±1.8e308) (${kind} ${quote(item.id)})`,
        });
      }
    });
  }
  return problems;
}

/** 400 invalid_request with every problem in details (the error middleware caps the list). */
export function assertValidGraph(nodes: WorkflowNode[], edges: WorkflowEdge[]): void {
  const problems = graphProblems(nodes, edges);
  if (problems.length === 0) return;
  const first = problems[0]!;
  throw invalidRequest(
    `The workflow graph is invalid: ${first.path} ${first.message}` +
      (problems.length > 1 ? `; and ${(problems.length - 1).toLocaleString('en-US')} more.` : '.'),
    problems,
  );
}
