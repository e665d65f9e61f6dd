// The rules of a workflow graph its JSON Schema cannot state (core/domain/workflows/graph.ts):
// unique node and edge ids, edges between nodes of the same workflow, numbers that round-trip.
// The API's use of them (400 with details, nothing written) is in test/workflows.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../core/platform/errors.js';
import {
  assertValidGraph,
  graphProblems,
  type WorkflowEdge,
  type WorkflowNode,
} from '../../core/domain/workflows/graph.js';

const node = (id: string, extra: Record<string, unknown> = {}): WorkflowNode => ({ id, ...extra });
const edge = (
  id: string,
  source: string,
  target: string,
  extra: Record<string, unknown> = {},
): WorkflowEdge => ({
  id,
  source,
  target,
  ...extra,
});

/** The AppError assertValidGraph throws for a graph. */
function refusal(nodes: WorkflowNode[], edges: WorkflowEdge[]): AppError {
  try {
    assertValidGraph(nodes, edges);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('assertValidGraph accepted the graph');
}

describe('graphProblems', () => {
  it('finds nothing wrong with an empty graph, a chain, a self-loop or two edges between the same nodes', () => {
    expect(graphProblems([], [])).toEqual([]);
    expect(
      graphProblems(
        [node('a'), node('b'), node('c')],
        [edge('ab', 'a', 'b'), edge('bc', 'b', 'c'), edge('cc', 'c', 'c'), edge('ab2', 'a', 'b')],
      ),
    ).toEqual([]);
  });

  it('names each repeated id by its index and the index of its first use', () => {
    expect(graphProblems([node('a'), node('b'), node('a'), node('a')], [])).toEqual([
      { path: '/nodes/2/id', message: expect.stringContaining('"a" of /nodes/0') },
      { path: '/nodes/3/id', message: expect.stringContaining('"a" of /nodes/0') },
    ]);
    expect(graphProblems([node('a')], [edge('e', 'a', 'a'), edge('e', 'a', 'a')])).toEqual([
      { path: '/edges/1/id', message: expect.stringContaining('"e" of /edges/0') },
    ]);
    // A node and an edge may share an id: they are different lists.
    expect(graphProblems([node('x')], [edge('x', 'x', 'x')])).toEqual([]);
  });

  it('names each end of an edge that joins no node, with the edge id', () => {
    expect(graphProblems([node('a')], [edge('e1', 'missing', 'gone')])).toEqual([
      { path: '/edges/0/source', message: 'names no node of this workflow: "missing" (edge "e1")' },
      { path: '/edges/0/target', message: 'names no node of this workflow: "gone" (edge "e1")' },
    ]);
  });

  it('treats ids named like Object.prototype members as ordinary ids', () => {
    const nodes = [node('__proto__'), node('constructor')];
    expect(graphProblems(nodes, [edge('e', '__proto__', 'constructor')])).toEqual([]);
    expect(graphProblems(nodes, [edge('toString', 'constructor', 'hasOwnProperty')])).toEqual([
      { path: '/edges/0/target', message: expect.stringContaining('"hasOwnProperty"') },
    ]);
    expect(graphProblems([node('__proto__'), node('__proto__')], [])).toHaveLength(1);
  });

  it('points at numbers that would not round-trip, with ~ and / in keys escaped as RFC 6901 says', () => {
    const problems = graphProblems(
      [node('a', { data: { 'x~/y': [1, Infinity] } }), node('b', { position: { x: 1e308, y: -0 } })],
      [edge('e', 'a', 'b', { weight: -Infinity })],
    );
    expect(problems).toEqual([
      { path: '/nodes/0/data/x~0~1y/1', message: expect.stringContaining('(node "a")') },
      { path: '/edges/0/weight', message: expect.stringContaining('(edge "e")') },
    ]);
  });

  it('clips a pointer made of a very long key, as it clips any echoed request value', () => {
    const [problem] = graphProblems([node('a', { ['k'.repeat(1000)]: Infinity })], []);
    expect(problem!.path.length).toBeLessThan(300);
    expect(problem!.path.endsWith('…')).toBe(true);
  });
});

describe('assertValidGraph', () => {
  it('accepts a valid graph', () => {
    expect(() => assertValidGraph([node('a'), node('b')], [edge('e', 'a', 'b')])).not.toThrow();
  });

  it('refuses with 400 invalid_request, the first problem in the message and every one in details', () => {
    const err = refusal([node('a'), node('a'), node('a')], [edge('e', 'a', 'zz')]);
    expect(err.status).toBe(400);
    expect(err.code).toBe('invalid_request');
    expect(err.message).toBe(
      'The workflow graph is invalid: /nodes/1/id repeats the node id "a" of /nodes/0; node ids must be unique; and 2 more.',
    );
    expect(err.details?.map((d) => d.path)).toEqual(['/nodes/1/id', '/nodes/2/id', '/edges/0/target']);
  });

  it('ends the message with a full stop when there is one problem', () => {
    expect(refusal([node('a')], [edge('e', 'a', 'b')]).message).toBe(
      'The workflow graph is invalid: /edges/0/target names no node of this workflow: "b" (edge "e").',
    );
  });
});
