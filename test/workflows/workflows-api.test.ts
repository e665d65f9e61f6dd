// Workflows (docs/workflows.md): create, read, list (newest update first, firm and platform
// tokens, keyset pages), update, delete, and firm isolation on every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS, FIRM_COLLECTIONS, firmCollection } from '../../core/platform/db/collections.js';
import type { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { flowEdge, flowNode } from './graphs.js';

let stack: Stack;
let a: Awaited<ReturnType<typeof createFirm>>;
let b: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  stack = await startStack();
  a = await createFirm(stack);
  b = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const smallGraph = (tag: string) => ({
  nodes: [flowNode(0, { data: { label: tag } }), flowNode(1), flowNode(2)],
  edges: [flowEdge(0, 3), flowEdge(1, 3)],
});

async function create(client: ApiClient, firmSlug: string, name: string, graph = smallGraph(name)) {
  const res = await client.post('/api/workflows', { firmSlug, name, ...graph });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; name: string };
}

const list = async (client: ApiClient, query = '') => client.get(`/api/workflows${query}`);

describe('POST /api/workflows and GET /api/workflows/{id}', () => {
  it('creates a workflow, answering {id, name}; reading it gives the whole record', async () => {
    const graph = smallGraph('intake');
    const res = await a.client.post('/api/workflows', {
      firmSlug: a.slug,
      name: 'New client intake',
      ...graph,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['id', 'name']);
    // The id names the firm (its workflows live in a collection of their own).
    expect(res.body).toEqual({
      id: expect.stringMatching(new RegExp(`^wf_${a.slug}_[\\w-]{16}$`)),
      name: 'New client intake',
    });

    const read = await a.client.get(`/api/workflows/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toMatch(/^application\/json; charset=utf-8/);
    expect(Object.keys(read.body)).toEqual([
      'id',
      'name',
      'firmSlug',
      'nodes',
      'edges',
      'created_at',
      'updated_at',
    ]);
    expect(read.body).toEqual({
      id: res.body.id,
      name: 'New client intake',
      firmSlug: a.slug,
      ...graph,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: read.body.created_at,
    });
    // The platform key reads any firm's workflow.
    expect((await stack.admin.get(`/api/workflows/${res.body.id}`)).body).toEqual(read.body);
  });

  it('accepts an empty graph, and nodes with only an id', async () => {
    const empty = await create(a.client, a.slug, 'Empty', { nodes: [], edges: [] });
    expect((await a.client.get(`/api/workflows/${empty.id}`)).body).toMatchObject({ nodes: [], edges: [] });
    const bare = await create(a.client, a.slug, 'Bare', {
      nodes: [{ id: 'a' }, { id: 'b' }],
      edges: [{ id: 'a->b', source: 'a', target: 'b' }],
    });
    expect((await a.client.get(`/api/workflows/${bare.id}`)).body).toMatchObject({
      nodes: [{ id: 'a' }, { id: 'b' }],
      edges: [{ id: 'a->b', source: 'a', target: 'b' }],
    });
  });

  it('is 404 workflow_not_found for an unknown id, 401 without a token', async () => {
    expectError(await a.client.get('/api/workflows/wf_nothing_here'), 404, 'workflow_not_found');
    expectError(await stack.api.get('/api/workflows/wf_nothing_here'), 401, 'unauthorized');
    expectError(await stack.api.post('/api/workflows', { firmSlug: a.slug }), 401, 'unauthorized');
  });

  it('is 404 firm_not_found for an unknown firm (platform key)', async () => {
    const res = await stack.admin.post('/api/workflows', {
      firmSlug: 'no-such-firm',
      name: 'x',
      nodes: [],
      edges: [],
    });
    expectError(res, 404, 'firm_not_found');
  });
});

describe('GET /api/workflows', () => {
  let firm: Awaited<ReturnType<typeof createFirm>>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    firm = await createFirm(stack);
    for (const name of ['first', 'second', 'third'])
      ids[name] = (await create(firm.client, firm.slug, name)).id;
    // Updating the oldest makes it the most recent.
    const put = await firm.client.put(`/api/workflows/${ids.first}`, {
      name: 'first, edited',
      ...smallGraph('x'),
    });
    expect(put.status).toBe(200);
  });

  it('lists the firm token’s own workflows, most recently updated first, whole records', async () => {
    const res = await list(firm.client);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((w: { name: string }) => w.name)).toEqual(['first, edited', 'third', 'second']);
    for (const w of res.body) {
      expect(Object.keys(w)).toEqual([
        'id',
        'name',
        'firmSlug',
        'nodes',
        'edges',
        'created_at',
        'updated_at',
      ]);
      expect(w.firmSlug).toBe(firm.slug);
      expect((await firm.client.get(`/api/workflows/${w.id}`)).body).toEqual(w);
    }
    const updated = res.body.map((w: { updated_at: string }) => Date.parse(w.updated_at));
    expect([...updated].sort((x, y) => y - x)).toEqual(updated);
    expect(res.headers.get('x-next-cursor')).toBeNull();
    // Naming its own firm is the same list.
    expect((await list(firm.client, `?firmSlug=${firm.slug}`)).body).toEqual(res.body);
  });

  it('lists any firm for the platform key with ?firmSlug=, and only that firm', async () => {
    const res = await list(stack.admin, `?firmSlug=${firm.slug}`);
    expect(res.status).toBe(200);
    expect(res.body.map((w: { id: string }) => w.id)).toEqual([ids.first, ids.third, ids.second]);
    const other = await list(stack.admin, `?firmSlug=${b.slug}`);
    expect(other.status).toBe(200);
    expect(other.body.every((w: { firmSlug: string }) => w.firmSlug === b.slug)).toBe(true);
  });

  it('is 400 for the platform key without ?firmSlug=, 404 for an unknown firm, 400 for a malformed slug', async () => {
    const details = expectError(await list(stack.admin), 400, 'invalid_request');
    expect(details.map((d) => d.path)).toEqual(['/firmSlug']);
    expectError(await list(stack.admin, '?firmSlug=no-such-firm'), 404, 'firm_not_found');
    expectError(await list(stack.admin, '?firmSlug=Not_A_Slug'), 400, 'invalid_request');
  });

  it('is an empty array for a firm without workflows', async () => {
    const fresh = await createFirm(stack);
    const res = await list(fresh.client);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('pages with ?limit= and the X-Next-Cursor header, in the same order, with nothing repeated', async () => {
    const first = await list(firm.client, '?limit=2');
    expect(first.body.map((w: { id: string }) => w.id)).toEqual([ids.first, ids.third]);
    const cursor = first.headers.get('x-next-cursor');
    expect(cursor).toMatch(/^[\w-]+\.[\w-]+$/);
    const second = await list(firm.client, `?limit=2&cursor=${encodeURIComponent(cursor!)}`);
    expect(second.body.map((w: { id: string }) => w.id)).toEqual([ids.second]);
    expect(second.headers.get('x-next-cursor')).toBeNull();
    // A cursor is for its own list and firm only; a forged one is refused.
    expectError(
      await list(stack.admin, `?firmSlug=${a.slug}&cursor=${encodeURIComponent(cursor!)}`),
      400,
      'invalid_cursor',
    );
    expectError(
      await list(firm.client, `?cursor=${encodeURIComponent(`x${cursor!}`)}`),
      400,
      'invalid_cursor',
    );
    expectError(await list(firm.client, '?limit=0'), 400, 'invalid_request');
    expectError(await list(firm.client, '?limit=501'), 400, 'invalid_request');
  });

  it('skips a directory entry whose workflow is gone (left by a crash between two writes)', async () => {
    const fresh = await createFirm(stack);
    const kept = await create(fresh.client, fresh.slug, 'kept');
    const db = stack.services.mongo.db;
    const dir = await db.collection(COLLECTIONS.workflowDirectories).findOne({ _id: fresh.slug as never });
    expect(dir?.entries).toHaveLength(1);
    await db.collection(COLLECTIONS.workflowDirectories).replaceOne(
      { _id: fresh.slug as never },
      {
        entries: [...dir!.entries, { id: 'wf_gone', updated_at: Date.now() + 1000 }],
        updated_at: new Date(),
      },
    );
    const res = await list(fresh.client, '?limit=1');
    expect(res.body.map((w: { id: string }) => w.id)).toEqual([kept.id]);
    expect(res.headers.get('x-next-cursor')).toBeNull();
  });
});

describe('PUT /api/workflows/{id}', () => {
  it('replaces name, nodes and edges; updated_at moves forward and created_at stays', async () => {
    const { id } = await create(a.client, a.slug, 'Before');
    const before = (await a.client.get(`/api/workflows/${id}`)).body;
    const graph = {
      nodes: [flowNode(7), flowNode(8, { data: { label: 'new' } })],
      edges: [flowEdge(3, 2, { source: 'n7', target: 'n8' })],
    };
    const res = await a.client.put(`/api/workflows/${id}`, { name: 'After', ...graph });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id,
      name: 'After',
      firmSlug: a.slug,
      ...graph,
      created_at: before.created_at,
      updated_at: expect.any(String),
    });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    expect((await a.client.get(`/api/workflows/${id}`)).body).toEqual(res.body);
    // At once again: still strictly later.
    const again = await a.client.put(`/api/workflows/${id}`, { name: 'After', ...graph });
    expect(Date.parse(again.body.updated_at)).toBeGreaterThan(Date.parse(res.body.updated_at));
    expect(again.body.created_at).toBe(before.created_at);
  });

  it('takes firmSlug only when it is the workflow’s own firm: a workflow never moves', async () => {
    const { id } = await create(a.client, a.slug, 'Stays');
    const graph = smallGraph('s');
    expect(
      (await a.client.put(`/api/workflows/${id}`, { firmSlug: a.slug, name: 'Stays', ...graph })).status,
    ).toBe(200);
    const moved = await stack.admin.put(`/api/workflows/${id}`, {
      firmSlug: b.slug,
      name: 'Moved',
      ...graph,
    });
    expect(expectError(moved, 400, 'invalid_request').map((d) => d.path)).toEqual(['/firmSlug']);
    // A firm token naming another firm: 403, as everywhere.
    expectError(
      await a.client.put(`/api/workflows/${id}`, { firmSlug: b.slug, name: 'Moved', ...graph }),
      403,
      'forbidden',
    );
    const after = (await stack.admin.get(`/api/workflows/${id}`)).body;
    expect(after).toMatchObject({ firmSlug: a.slug, name: 'Stays' });
    expect((await list(b.client)).body.some((w: { id: string }) => w.id === id)).toBe(false);
  });

  it('needs the whole workflow (name, nodes, edges) and refuses read-only or unknown fields', async () => {
    const { id } = await create(a.client, a.slug, 'Whole');
    const graph = smallGraph('w');
    expect(
      expectError(
        await a.client.put(`/api/workflows/${id}`, { nodes: graph.nodes, edges: graph.edges }),
        400,
        'invalid_request',
      ).map((d) => d.path),
    ).toEqual(['/name']);
    const withReadOnly = await a.client.put(`/api/workflows/${id}`, {
      id,
      name: 'Whole',
      ...graph,
      created_at: 'x',
    });
    expect(
      expectError(withReadOnly, 400, 'invalid_request')
        .map((d) => d.path)
        .sort(),
    ).toEqual(['/created_at', '/id']);
    expect((await a.client.get(`/api/workflows/${id}`)).body.name).toBe('Whole');
  });

  it('is 404 for an unknown id', async () => {
    expectError(
      await a.client.put('/api/workflows/wf_unknown', { name: 'x', nodes: [], edges: [] }),
      404,
      'workflow_not_found',
    );
  });

  it('concurrent updates: the last writer wins whole, never a mix of two', async () => {
    const { id } = await create(a.client, a.slug, 'Contended');
    // Each version is self-consistent: its name, every node's data and every edge say which one it is.
    const version = (k: number) => ({
      name: `version ${k}`,
      nodes: Array.from({ length: 40 }, (_, i) =>
        flowNode(i, { data: { version: k, label: `v${k} node ${i}` } }),
      ),
      edges: Array.from({ length: 60 }, (_, i) => flowEdge(i, 40, { data: { version: k } })),
    });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, k) => a.client.put(`/api/workflows/${id}`, version(k))),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const final = (await a.client.get(`/api/workflows/${id}`)).body;
    const k = Number(/^version (\d)$/.exec(final.name)![1]);
    expect(final).toMatchObject(version(k));
    // The winner is the write with the latest updated_at, and every write got its own time.
    const latest = results
      .map((r) => r.body)
      .sort((x, y) => Date.parse(y.updated_at) - Date.parse(x.updated_at))[0];
    expect(latest).toEqual(final);
    expect(new Set(results.map((r) => r.body.updated_at)).size).toBe(8);
    // Listed once.
    expect((await list(a.client)).body.filter((w: { id: string }) => w.id === id)).toHaveLength(1);
  });
});

describe('DELETE /api/workflows/{id}', () => {
  it('deletes: {id, deleted: true}; then the workflow is 404 everywhere and gone from the list', async () => {
    const { id } = await create(a.client, a.slug, 'Doomed');
    const res = await a.client.delete(`/api/workflows/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, deleted: true });
    expectError(await a.client.get(`/api/workflows/${id}`), 404, 'workflow_not_found');
    expectError(
      await a.client.put(`/api/workflows/${id}`, { name: 'x', nodes: [], edges: [] }),
      404,
      'workflow_not_found',
    );
    expectError(await a.client.delete(`/api/workflows/${id}`), 404, 'workflow_not_found');
    expect((await list(a.client)).body.some((w: { id: string }) => w.id === id)).toBe(false);
    const stored = await firmCollection(stack.services.mongo.db, FIRM_COLLECTIONS.workflows, a.slug).findOne({
      _id: id as never,
    });
    expect(stored).toBeNull();
  });
});

describe('firm isolation', () => {
  it('a firm token naming another firm is 403 (create, list)', async () => {
    const body = { firmSlug: a.slug, name: 'Not mine', ...smallGraph('x') };
    expectError(await b.client.post('/api/workflows', body), 403, 'forbidden');
    expectError(await list(b.client, `?firmSlug=${a.slug}`), 403, 'forbidden');
    expect((await list(a.client)).body.some((w: { name: string }) => w.name === 'Not mine')).toBe(false);
  });

  it('another firm’s workflow by id is 404 for GET, PUT and DELETE, and stays as it was', async () => {
    const { id } = await create(a.client, a.slug, 'Private');
    const before = (await a.client.get(`/api/workflows/${id}`)).body;
    expectError(await b.client.get(`/api/workflows/${id}`), 404, 'workflow_not_found');
    expectError(
      await b.client.put(`/api/workflows/${id}`, { name: 'Taken', ...smallGraph('t') }),
      404,
      'workflow_not_found',
    );
    expectError(await b.client.delete(`/api/workflows/${id}`), 404, 'workflow_not_found');
    expect((await a.client.get(`/api/workflows/${id}`)).body).toEqual(before);
    expect((await list(b.client)).body.some((w: { id: string }) => w.id === id)).toBe(false);
  });

  it('an id rewritten to name another firm finds nothing; ids that are not workflow ids are 404', async () => {
    const { id } = await create(a.client, a.slug, 'Renamed id');
    const forged = id.replace(`wf_${a.slug}_`, `wf_${b.slug}_`);
    expectError(await b.client.get(`/api/workflows/${forged}`), 404, 'workflow_not_found');
    expectError(await stack.admin.get(`/api/workflows/${forged}`), 404, 'workflow_not_found');
    for (const bad of [
      'wf_',
      'wf_Not_A_Slug_x',
      'agent_123',
      'wf_-bad-_abc',
      encodeURIComponent('wf_a.b_c'),
    ]) {
      expectError(await stack.admin.get(`/api/workflows/${bad}`), 404, 'workflow_not_found');
    }
  });
});
