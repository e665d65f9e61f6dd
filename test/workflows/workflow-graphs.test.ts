// Workflow graphs (docs/workflows.md#graph-rules): what a flow builder saves comes back exactly (500
// nodes and 2,000 edges, React Flow's extras, nulls, unicode, keys like "$x" and "a.b"), size limits, and
// broken graphs refused with details that point at the node or edge by index and name its id,
// with nothing written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRM_COLLECTIONS, firmCollection } from '../../core/platform/db/collections.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { awkwardData, flowEdge, flowGraph, flowNode } from './graphs.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const MiB = 1024 * 1024;
const storedCount = () =>
  firmCollection(stack.services.mongo.db, FIRM_COLLECTIONS.workflows, firm.slug).countDocuments({});
const post = (body: Record<string, unknown>) =>
  firm.client.post('/api/workflows', { firmSlug: firm.slug, name: 'Graph', ...body });

/** The response's JSON text for `key`, as the server wrote it (exact: key order, escapes). */
const exactly = (value: unknown) => JSON.stringify(value);

describe('round trip', () => {
  it('a 500-node, 2,000-edge graph with React Flow extras comes back exactly, in order', async () => {
    const graph = flowGraph(500, 2000);
    const res = await post({ name: 'Full intake flow ⚖️', ...graph });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    const read = await firm.client.get(`/api/workflows/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.nodes).toHaveLength(500);
    expect(read.body.edges).toHaveLength(2000);
    expect(read.body.nodes).toStrictEqual(graph.nodes);
    expect(read.body.edges).toStrictEqual(graph.edges);
    // Deep equality ignores key order; the text does not.
    expect(exactly(read.body.nodes)).toBe(exactly(graph.nodes));
    expect(exactly(read.body.edges)).toBe(exactly(graph.edges));
    expect(read.body.name).toBe('Full intake flow ⚖️');
    // The list carries the same graph.
    const listed = (await firm.client.get('/api/workflows')).body.find(
      (w: { id: string }) => w.id === res.body.id,
    );
    expect(exactly(listed)).toBe(exactly(read.body));
  });

  it('keys no database field may have, NUL, lone surrogates and "__proto__" round-trip, and pollute nothing', async () => {
    const data = awkwardData();
    expect(Object.hasOwn(data, '__proto__')).toBe(true);
    const nodes = [
      { id: '__proto__', data },
      { id: 'constructor', type: 'a.b', position: { x: -0.25, y: 1e21 }, data: { $where: 'sleep(1)' } },
      { id: '$x', 'a.b': { $set: 1 }, '': null, data },
    ];
    const edges = [
      { id: 'toString', source: '__proto__', target: 'constructor', data },
      { id: 'e.2', source: '$x', target: '$x', sourceHandle: '$h', targetHandle: 'a.b', label: 0 },
    ];
    const res = await post({ nodes, edges });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const read = await firm.client.get(`/api/workflows/${res.body.id}`);
    expect(read.body.nodes).toStrictEqual(nodes);
    expect(read.body.edges).toStrictEqual(edges);
    expect(exactly(read.body.nodes)).toBe(exactly(nodes));
    expect(exactly(read.body.edges)).toBe(exactly(edges));
    expect(read.body.nodes[0].data.nul).toBe('before\u0000after');
    expect(read.body.nodes[0].data.lone).toBe('\ud800 lone surrogate');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('an edge’s label and handles are other fields of the edge: any JSON value is stored as given', async () => {
    // Only id, source and target are the edge's own; builders put labels with their styling, or
    // numeric handle ids, there.
    const nodes = [{ id: 'a' }, { id: 'b' }];
    const edges = [
      { id: 'e1', source: 'a', target: 'b', label: { text: 'Yes', style: { color: '#0a0' } } },
      { id: 'e2', source: 'b', target: 'a', label: true, sourceHandle: 1, targetHandle: { side: 'left' } },
      {
        id: 'e3',
        source: 'a',
        target: 'a',
        label: ['two', 'lines'],
        sourceHandle: 'true',
        targetHandle: null,
      },
    ];
    const res = await post({ nodes, edges });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const read = await firm.client.get(`/api/workflows/${res.body.id}`);
    expect(exactly(read.body.edges)).toBe(exactly(edges));
    const put = await firm.client.put(`/api/workflows/${res.body.id}`, {
      name: 'Graph',
      nodes,
      edges: [{ ...edges[1], label: 42.5 }],
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.edges).toStrictEqual([{ ...edges[1], label: 42.5 }]);
  });

  it('a 1.8 MiB graph is accepted and comes back whole', async () => {
    const padding = 'x'.repeat(3340);
    const graph = {
      nodes: Array.from({ length: 500 }, (_, i) => flowNode(i, { data: { note: `${i}:${padding}` } })),
      edges: Array.from({ length: 400 }, (_, i) => flowEdge(i, 500)),
    };
    const size = Buffer.byteLength(JSON.stringify({ firmSlug: firm.slug, name: 'Graph', ...graph }));
    expect(size).toBeGreaterThan(1.75 * MiB);
    expect(size).toBeLessThan(1.85 * MiB);
    const res = await post(graph);
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    const read = await firm.client.get(`/api/workflows/${res.body.id}`);
    expect(exactly(read.body.nodes)).toBe(exactly(graph.nodes));
    expect(exactly(read.body.edges)).toBe(exactly(graph.edges));
    const put = await firm.client.put(`/api/workflows/${res.body.id}`, { name: 'Graph 2', ...graph });
    expect(put.status).toBe(200);
  });

  it('over 2 MiB is 413 payload_too_large, for create and update, and nothing changes', async () => {
    const before = await storedCount();
    const padding = 'x'.repeat(2 * MiB);
    const huge = { nodes: [{ id: 'a', data: { padding } }], edges: [] };
    expectError(await post(huge), 413, 'payload_too_large');
    const { id } = (await post({ nodes: [], edges: [] })).body;
    expectError(
      await firm.client.put(`/api/workflows/${id}`, { name: 'Huge', ...huge }),
      413,
      'payload_too_large',
    );
    expect((await firm.client.get(`/api/workflows/${id}`)).body).toMatchObject({ name: 'Graph', nodes: [] });
    expect(await storedCount()).toBe(before + 1);
  });
});

describe('broken graphs: 400 invalid_request with details, nothing written', () => {
  // A firm of its own: the round trips above stored MiBs of graphs, and FerretDB reads every
  // document to count them, which each refusal below does twice (7 s in all, against 0.4 s).
  beforeAll(async () => {
    firm = await createFirm(stack);
  });
  const nodes = () => [flowNode(0), flowNode(1), flowNode(2)];
  const edges = () => [flowEdge(0, 3), flowEdge(1, 3)];

  /** Posts `body`, expects a 400 with details, and that no workflow was stored. */
  async function refused(body: Record<string, unknown>) {
    const before = await storedCount();
    const res = await post(body);
    const details = expectError(res, 400, 'invalid_request');
    expect(await storedCount()).toBe(before);
    return { details, message: res.body.error.message as string };
  }

  it('a repeated node id: the repeat, by index, naming the id', async () => {
    const { details } = await refused({ nodes: [...nodes(), flowNode(1)], edges: edges() });
    expect(details).toEqual([{ path: '/nodes/3/id', message: expect.stringContaining('"n1"') }]);
    expect(details[0]!.message).toContain('/nodes/1');
  });

  it('a repeated edge id', async () => {
    const { details } = await refused({
      nodes: nodes(),
      edges: [...edges(), flowEdge(0, 3, { source: 'n2' })],
    });
    expect(details).toEqual([{ path: '/edges/2/id', message: expect.stringContaining('"e0"') }]);
  });

  it('a dangling source and target: each named, with the edge id', async () => {
    const { details } = await refused({
      nodes: nodes(),
      edges: [
        ...edges(),
        flowEdge(5, 3, { source: 'ghost', target: 'n0' }),
        flowEdge(6, 3, { target: 'nowhere' }),
      ],
    });
    expect(details).toEqual([
      { path: '/edges/2/source', message: expect.stringMatching(/"ghost".*"e5"/) },
      { path: '/edges/3/target', message: expect.stringMatching(/"nowhere".*"e6"/) },
    ]);
  });

  it('a missing node id, a missing edge id, an empty id', async () => {
    const { id: _drop, ...noId } = flowNode(1);
    const { id: _dropEdge, ...edgeNoId } = flowEdge(0, 3);
    const { details } = await refused({
      nodes: [flowNode(0), noId, flowNode(2, { id: '' })],
      edges: [edgeNoId],
    });
    expect(details.map((d) => d.path)).toEqual(['/nodes/1/id', '/nodes/2/id', '/edges/0/id']);
    expect(details[0]!.message).toBe('is required');
  });

  it('501 nodes, 2,001 edges', async () => {
    const many = flowGraph(501, 10);
    expect((await refused(many)).details).toContainEqual({
      path: '/nodes',
      message: 'must NOT have more than 500 items',
    });
    const edgesOver = flowGraph(10, 2001);
    expect((await refused(edgesOver)).details).toContainEqual({
      path: '/edges',
      message: 'must NOT have more than 2000 items',
    });
  });

  it('an empty name, a 201-character name, a name with NUL; 200 characters is fine', async () => {
    for (const name of ['', 'n'.repeat(201), 'a\u0000b']) {
      const { details } = await refused({ name, nodes: nodes(), edges: edges() });
      expect(details.map((d) => d.path)).toEqual(['/name']);
    }
    expect((await post({ name: 'é'.repeat(200), nodes: nodes(), edges: edges() })).status).toBe(200);
  });

  it('wrong types: each pointed at by index, naming the item’s id', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
      [{ nodes: 'n0', edges: [] }, '/nodes'],
      [{ nodes: nodes(), edges: {} }, '/edges'],
      [{ nodes: [flowNode(0), 'n1'], edges: [] }, '/nodes/1'],
      [{ nodes: [flowNode(0), flowNode(1, { id: 17 })], edges: [] }, '/nodes/1/id', /"17"/],
      [{ nodes: [flowNode(0, { position: { x: '10', y: 0 } })], edges: [] }, '/nodes/0/position/x', /"n0"/],
      [{ nodes: [flowNode(0, { position: 'top' })], edges: [] }, '/nodes/0/position', /"n0"/],
      [{ nodes: [flowNode(0, { data: 'text' })], edges: [] }, '/nodes/0/data', /"n0"/],
      [{ nodes: [flowNode(0, { type: 3 })], edges: [] }, '/nodes/0/type', /"n0"/],
      [{ nodes: nodes(), edges: [flowEdge(0, 3, { source: 1 })] }, '/edges/0/source', /"e0"/],
      [{ nodes: nodes(), edges: [flowEdge(4, 3, { target: 5 })] }, '/edges/0/target', /"e4"/],
      [{ nodes: nodes(), edges: [flowEdge(0, 3, { target: null })] }, '/edges/0/target', /"e0"/],
      [{ nodes: nodes(), edges: [null] }, '/edges/0'],
      [{ name: 42, nodes: nodes(), edges: [] }, '/name'],
      [{ nodes: nodes(), edges: [], extra: true }, '/extra'],
      // An own "__proto__" key (as JSON.parse makes it) at the top level is an unknown field like any other.
      [{ nodes: nodes(), edges: [], ...JSON.parse('{"__proto__": {"admin": true}}') }, '/__proto__'],
      [{ nodes: [flowNode(0, { id: { $ne: null } })], edges: [] }, '/nodes/0/id'],
    ];
    for (const [body, path, names] of cases) {
      const { details } = await refused(body);
      const detail = details.find((d) => d.path === path);
      expect(detail, `${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(details)}`).toBeDefined();
      if (names !== undefined) expect(detail!.message).toMatch(names);
    }
  });

  it('a number past the double range (which would come back as null) is refused where it is', async () => {
    const body = {
      firmSlug: firm.slug,
      name: 'Graph',
      nodes: [flowNode(0), flowNode(1, { data: { 'weird/key': [1, 2] } })],
      edges: [],
    };
    // JSON.parse reads 1e400 as Infinity, which JSON.stringify would write back as null.
    const text = JSON.stringify(body).replace('[1,2]', '[1,1e400]');
    const before = await storedCount();
    const res = await firm.client.request('POST', '/api/workflows', {
      rawBody: text,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(expectError(res, 400, 'invalid_request')).toEqual([
      { path: '/nodes/1/data/weird~1key/1', message: expect.stringContaining('(node "n1")') },
    ]);
    expect(await storedCount()).toBe(before);
  });

  it('lists every problem, at most 50 in details, and says how many more', async () => {
    const { details, message } = await refused({
      nodes: [flowNode(0)],
      edges: Array.from({ length: 60 }, (_, i) => flowEdge(i, 1, { target: `missing-${i}` })),
    });
    expect(details).toHaveLength(50);
    expect(details[0]).toEqual({ path: '/edges/0/target', message: expect.stringContaining('"missing-0"') });
    expect(message).toMatch(/10 more/);
  });

  it('an update with a broken graph leaves the workflow as it was', async () => {
    const created = await post({ nodes: nodes(), edges: edges() });
    const id = created.body.id as string;
    const before = (await firm.client.get(`/api/workflows/${id}`)).body;
    const res = await firm.client.put(`/api/workflows/${id}`, {
      name: 'Broken',
      nodes: nodes(),
      edges: [flowEdge(0, 3, { target: 'ghost' })],
    });
    expect(expectError(res, 400, 'invalid_request').map((d) => d.path)).toEqual(['/edges/0/target']);
    expect((await firm.client.get(`/api/workflows/${id}`)).body).toEqual(before);
  });
});
