// list-calls (POST /api/v2/list-calls, the first page of 50) as the calls collection grows:
// two apps side by side (each its own database and web process), one whose firm has
// BENCH_LIST_SMALL (1,000) ended calls and one whose firm has BENCH_LIST_LARGE (20,000), with
// ~3 KB transcripts as real ones have, seeded with the driver. Latency p50 of one request at a
// time, the sizes alternated round by round; beside it the same query the route runs
// (find({firm, finished: true}).sort({end_timestamp: -1, call_id: -1}).limit(51)) issued
// directly with the driver: FerretDB does not use the compound index for it (it filters by
// scanning and sorts in its own memory over every match,
// docs/operations.md#data-access-on-ferretdb-and-mongodb), so that query, not the route, is what grows
// with the firm's calls.
import { getFirm } from '../../core/domain/firms/firms.js';
import { findAgent } from '../../core/domain/agents/agents.js';
import { callsCollection } from '../../core/domain/calls/calls.js';
import { knob, loop, say, type Rate } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, makeTenant, type App, type Tenant, type Web } from '../lib/stack.js';
import { seedEndedCalls } from '../lib/seed.js';

interface Side {
  app: App;
  web: Web;
  tenant: Tenant;
  size: number;
  route: () => Promise<void>;
  driver: () => Promise<void>;
}

async function side(ctx: Parameters<Scenario['run']>[0], size: number): Promise<Side> {
  const app = await createApp(ctx.stores, `list-calls-${size}`);
  const web = await app.startWeb();
  const tenant = await makeTenant(app, web.base);
  const firm = (await getFirm(app.db, tenant.slug))!;
  const agent = (await findAgent(app.db, tenant.agentId))!;
  const t = performance.now();
  await seedEndedCalls(app.db, firm, agent, size);
  say(`list-calls: seeded ${size} calls in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const route = async (): Promise<void> => {
    const page = await api<{ calls: unknown[] }>(web.base, 'POST', '/api/v2/list-calls', tenant.key, {
      firmSlug: tenant.slug,
    });
    if (page.calls.length !== 50) throw new Error(`list-calls gave ${page.calls.length} calls`);
  };
  const calls = callsCollection(app.db);
  const driver = async (): Promise<void> => {
    const rows = await calls
      .find({ firm: tenant.slug, finished: true })
      .sort({ end_timestamp: -1, call_id: -1 })
      .limit(51)
      .toArray();
    if (rows.length !== 51) throw new Error(`the query gave ${rows.length} calls`);
  };
  return { app, web, tenant, size, route, driver };
}

export const listCalls: Scenario = {
  name: 'list-calls',
  ids: [
    'list_calls_20k_vs_1k',
    'list_calls_vs_driver_20k',
    'list_calls_vs_driver_1k',
    'list_driver_20k_vs_1k',
  ],
  async run(ctx) {
    const smallSize = knob('BENCH_LIST_SMALL', 1000, 100_000);
    const largeSize = knob('BENCH_LIST_LARGE', 20_000, 200_000);
    const requests = knob('BENCH_LIST_REQUESTS', 3, 1000);
    const small = await side(ctx, smallSize);
    const large = await side(ctx, largeSize);
    try {
      const p50 = (r: Rate) => r.p50;
      const results: Record<'smallRoute' | 'largeRoute' | 'smallDriver' | 'largeDriver', number[]> = {
        smallRoute: [],
        largeRoute: [],
        smallDriver: [],
        largeDriver: [],
      };
      // Warm-up of each (compiles, caches, PostgreSQL's buffers).
      for (const s of [small, large]) {
        await loop(1, 1, s.route);
        await loop(1, 1, s.driver);
      }
      for (let round = 1; round <= ctx.rounds; round++) {
        const order: Array<[Side, 'small' | 'large']> =
          round % 2 === 1
            ? [
                [small, 'small'],
                [large, 'large'],
              ]
            : [
                [large, 'large'],
                [small, 'small'],
              ];
        for (const [s, name] of order) {
          results[`${name}Route`].push(p50(await loop(1, requests, s.route)));
          results[`${name}Driver`].push(p50(await loop(1, requests, s.driver)));
        }
        say(
          `list-calls round ${round}: p50 ${results.smallRoute.at(-1)!.toFixed(1)} ms at ${smallSize}, ${results.largeRoute.at(-1)!.toFixed(1)} ms at ${largeSize}; ` +
            `driver ${results.smallDriver.at(-1)!.toFixed(1)} / ${results.largeDriver.at(-1)!.toFixed(1)} ms`,
        );
      }
      const k = (n: number) => `${Math.round(n / 1000)}k`;
      const rows: Row[] = [
        ratioRow(
          {
            id: 'list_calls_20k_vs_1k',
            label: `list-calls p50, ${k(largeSize)} calls in the firm`,
            unit: 'ms',
            baselineLabel: `with ${k(smallSize)}`,
            target: { op: '<=', limit: 1.5 },
            note:
              'FerretDB 1.24 does not use the {firm, finished, end_timestamp, call_id} index for this query: it scans the ' +
              "collection for the firm's finished calls and sorts every match in its own memory before the limit, so " +
              "the first page costs in proportion to the firm's calls (MongoDB serves it from the index). The target is " +
              'therefore held against the same query issued directly with the driver (list_calls_vs_driver_20k).',
          },
          results.largeRoute,
          results.smallRoute,
        ),
        ratioRow(
          {
            id: 'list_calls_vs_driver_20k',
            label: `list-calls p50, ${k(largeSize)} calls`,
            unit: 'ms',
            baselineLabel: 'its find().sort().limit() via the driver',
            target: { op: '<=', limit: 1.5 },
          },
          results.largeRoute,
          results.largeDriver,
        ),
        ratioRow(
          {
            id: 'list_calls_vs_driver_1k',
            label: `list-calls p50, ${k(smallSize)} calls`,
            unit: 'ms',
            baselineLabel: 'its find().sort().limit() via the driver',
          },
          results.smallRoute,
          results.smallDriver,
        ),
        ratioRow(
          {
            id: 'list_driver_20k_vs_1k',
            label: `that query (driver) p50, ${k(largeSize)} calls`,
            unit: 'ms',
            baselineLabel: `with ${k(smallSize)}`,
          },
          results.largeDriver,
          results.smallDriver,
        ),
      ];
      return rows;
    } finally {
      await large.app.close();
      await small.app.close();
    }
  },
};
