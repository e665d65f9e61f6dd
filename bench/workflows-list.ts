// Whether one firm's workflow reads cost more as other firms store workflows: GET /api/workflows
// (the list) and GET /api/workflows/{id} for one firm with 20 workflows, timed before and after
// other firms' workflows are added, beside a read by _id from one shared collection holding
// every firm's workflows (what a single `workflows` collection would give). FerretDB answers
// even a read by _id by scanning the table, so only the per-firm collections stay flat there.
//   npx tsx bench/workflows-list.ts   (BENCH_OTHER_WORKFLOWS=500 of BENCH_GRAPH_KB=100 each,
//                                      BENCH_REQUESTS=60, BENCH_CONCURRENCY=4)
// Not part of `npm test`. Uses REDIS_URL / MONGODB_URI when set, else starts the local Redis and
// FerretDB (on PostgreSQL) as `npm test` does; the web app runs in this process. Figures are
// same-run ratios (after ÷ before), so the machine's speed cancels out. The database is dropped
// at the end.
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices } from '../core/wiring/services.js';
import { FIRM_COLLECTIONS, firmCollection } from '../core/platform/db/collections.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import type { WorkflowDoc } from '../core/domain/workflows/workflows.js';
import { startWeb } from '../api/web.js';
import { cleanup, freshEnvironment, rand, startStores } from './lib/stack.js';
import { described, knob, loop, type Rate } from './lib/measure.js';

const OTHER_WORKFLOWS = knob('BENCH_OTHER_WORKFLOWS', 500, 20_000);
const GRAPH_KB = knob('BENCH_GRAPH_KB', 100, 1900);
const REQUESTS = knob('BENCH_REQUESTS', 60, 5000);
const CONCURRENCY = knob('BENCH_CONCURRENCY', 4, 64);
const OWN_WORKFLOWS = 20;

const say = (line: string): void => void process.stderr.write(`[workflows-list] ${line}\n`);

/** A graph of about `kb` KiB: a chain of nodes with some data each (random, so it does not compress). */
function graph(kb: number) {
  const count = Math.max(2, Math.min(500, Math.floor(kb / 2)));
  const note = () =>
    randomBytes(Math.floor(Math.max(0, (kb * 1024) / count - 200) * 0.75)).toString('base64');
  return {
    nodes: Array.from({ length: count }, (_, i) => ({
      id: `n${i}`,
      type: 'default',
      position: { x: i * 100, y: 0 },
      data: { label: `Step ${i}`, note: note() },
    })),
    edges: Array.from({ length: count - 1 }, (_, i) => ({
      id: `e${i}`,
      source: `n${i}`,
      target: `n${i + 1}`,
    })),
  };
}

/** p50 and p95 of `count` runs of `op`, `CONCURRENCY` at a time. */
const measure = (count: number, op: () => Promise<void>): Promise<Rate> => loop(CONCURRENCY, count, op);

async function main(): Promise<void> {
  const stores = await startStores();
  const { env, adminKey } = freshEnvironment(stores, 'workflows-list', { PORT: '0' });
  const config = loadConfig(env);
  const services = createServices(config, createLogger(config.logLevel, 'bench'), 'producer');
  const db = services.mongo.db;
  const web = await startWeb(services, '127.0.0.1');
  try {
    await ensureIndexes(db);
    const base = `http://127.0.0.1:${web.port}`;
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
      return text;
    };
    const slug = `bench-${rand()}`;
    await call('POST', '/api/firms', adminKey, { slug, name: 'Bench firm' });
    const key = (
      JSON.parse(await call('POST', '/api/auth/api-keys', adminKey, { firmSlug: slug, name: 'bench' })) as {
        key: string;
      }
    ).key;
    for (let i = 0; i < OWN_WORKFLOWS; i++) {
      await call('POST', '/api/workflows', key, { firmSlug: slug, name: `Flow ${i}`, ...graph(20) });
    }

    const ownDocs = await firmCollection<WorkflowDoc>(db, FIRM_COLLECTIONS.workflows, slug)
      .find({})
      .toArray();
    const someId = ownDocs[0]!._id;
    // One shared collection with every firm's workflows, for comparison.
    const shared = db.collection<WorkflowDoc>(`bench_shared_${rand()}`);
    await shared.insertMany(ownDocs);

    const list = async () => {
      const workflows = JSON.parse(await call('GET', '/api/workflows', key)) as unknown[];
      if (workflows.length !== OWN_WORKFLOWS) throw new Error(`listed ${workflows.length}`);
    };
    const get = async () => {
      await call('GET', `/api/workflows/${someId}`, key);
    };
    const sharedRead = async () => {
      if ((await shared.findOne({ _id: someId })) === null) throw new Error('not in the shared collection');
    };
    const time = async (op: () => Promise<void>) => {
      await measure(5, op);
      return measure(REQUESTS, op);
    };
    const round = async () => ({
      list: await time(list),
      get: await time(get),
      shared: await time(sharedRead),
    });

    say(`timing with ${OWN_WORKFLOWS} workflows stored (all the firm's)`);
    const before = await round();

    say(`storing ${OTHER_WORKFLOWS} workflows of 10 other firms, ${GRAPH_KB} KiB each`);
    const started = performance.now();
    for (let done = 0; done < OTHER_WORKFLOWS;) {
      const n = Math.min(10, OTHER_WORKFLOWS - done);
      const other = `other-${done % 10}`;
      const g = graph(GRAPH_KB);
      const docs: WorkflowDoc[] = Array.from({ length: n }, (_, k) => ({
        _id: `wf_${other}_${rand(12)}`,
        firm: other,
        name: `Other ${done + k}`,
        nodes_json: JSON.stringify(g.nodes),
        edges_json: JSON.stringify(g.edges),
        node_count: g.nodes.length,
        edge_count: g.edges.length,
        created_at: new Date(),
        updated_at: new Date(),
      }));
      await firmCollection<WorkflowDoc>(db, FIRM_COLLECTIONS.workflows, other).insertMany(docs);
      await shared.insertMany(docs);
      done += n;
    }
    say(`stored in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const after = await round();

    const ms = (n: number) => `${n.toFixed(1)} ms`.padStart(10);
    const ratio = (a: number, b: number) => `×${(a / b).toFixed(2)}`.padStart(8);
    const row = (label: string, b: { p50: number; p95: number }, a: { p50: number; p95: number }) =>
      `${label.padEnd(44)} ${ms(b.p50)} ${ms(a.p50)} ${ratio(a.p50, b.p50)} ${ms(b.p95)} ${ms(a.p95)} ${ratio(a.p95, b.p95)}`;
    process.stdout.write(
      [
        '',
        `${OWN_WORKFLOWS} workflows of the firm listed; then ${OTHER_WORKFLOWS} other workflows of ${GRAPH_KB} KiB added. ` +
          `${REQUESTS} timed runs per row, ${CONCURRENCY} at a time.`,
        '',
        `${''.padEnd(44)} ${'p50 before'.padStart(10)} ${'p50 after'.padStart(10)} ${'ratio'.padStart(8)} ${'p95 before'.padStart(10)} ${'p95 after'.padStart(10)} ${'ratio'.padStart(8)}`,
        row('GET /api/workflows (the list, 20 workflows)', before.list, after.list),
        row('GET /api/workflows/{id}', before.get, after.get),
        row('read by _id, one shared collection', before.shared, after.shared),
        '',
      ].join('\n'),
    );
  } finally {
    await db.dropDatabase().catch(() => {});
    await web.stop();
    await services.close();
  }
}

main()
  .then(() => cleanup())
  .then(
    () => process.exit(0),
    async (err: unknown) => {
      process.stderr.write(`workflows-list bench failed: ${described(err)}\n`);
      await cleanup();
      process.exit(1);
    },
  );
