// list-calls (POST /api/v2/list-calls, the first page of BENCH_LIST_PAGE = 20) as the firm's
// calls grow: two apps side by side (each its own database and web process), one whose firm has
// BENCH_LIST_SMALL (1,000) ended calls and one whose firm has BENCH_LIST_LARGE (20,000), with
// ~3 KB transcripts as real ones have, seeded with the driver, so with no list index yet: the
// first request builds the firm's index from MongoDB (the backfill; its time is printed).
// Latency p50 of one request at a time (BENCH_LIST_REQUESTS per round), the sizes alternated
// round by round, beside the page's own calls read by _id with the driver, all at once (the
// floor of a page: list_calls_20k_ms's baseline). For reference, the query list-calls ran
// before its index (find({firm, finished: true}).sort({end_timestamp: -1, call_id: -1})
// .limit(21)) issued directly with the driver (BENCH_LIST_DRIVER_REQUESTS per round): FerretDB
// 1.24 pushes down neither the sort nor the limit, so that query reads every call of the firm
// (docs/operations.md#data-access-on-ferretdb-and-mongodb).
import { getFirm } from '../../core/domain/firms/firms.js';
import { findAgent } from '../../core/domain/agents/agents.js';
import { callsCollection } from '../../core/domain/calls/calls.js';
import { knob, loadAverage, loop, say, type Rate } from '../lib/measure.js';
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
  /** The first page's calls read by _id with the driver, all at once: the floor of a page. */
  reads: () => Promise<void>;
}

async function side(ctx: Parameters<Scenario['run']>[0], size: number, pageSize: number): Promise<Side> {
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
      limit: pageSize,
    });
    if (page.calls.length !== pageSize) throw new Error(`list-calls gave ${page.calls.length} calls`);
  };
  const calls = callsCollection(app.db);
  const driver = async (): Promise<void> => {
    const rows = await calls
      .find({ firm: tenant.slug, finished: true })
      .sort({ end_timestamp: -1, call_id: -1 })
      .limit(pageSize + 1)
      .toArray();
    if (rows.length !== pageSize + 1) throw new Error(`the query gave ${rows.length} calls`);
  };
  // The first request builds the firm's index from MongoDB (the backfill of calls that ended
  // before it).
  const t0 = performance.now();
  const first = await api<{ calls: Array<{ call_id: string }> }>(
    web.base,
    'POST',
    '/api/v2/list-calls',
    tenant.key,
    {
      firmSlug: tenant.slug,
      limit: pageSize,
    },
  );
  say(`list-calls: first request (index built from ${size} calls) ${(performance.now() - t0).toFixed(0)} ms`);
  const ids = first.calls.map((c) => c.call_id);
  const reads = async (): Promise<void> => {
    const docs = await Promise.all(ids.map((id) => calls.findOne({ _id: id })));
    if (docs.some((d) => d === null)) throw new Error('a listed call is missing');
  };
  return { app, web, tenant, size, route, driver, reads };
}

export const listCalls: Scenario = {
  name: 'list-calls',
  ids: ['list_calls_20k_ms', 'list_calls_20k_vs_1k', 'list_driver_20k_vs_1k'],
  async run(ctx) {
    const smallSize = knob('BENCH_LIST_SMALL', 1000, 100_000);
    const largeSize = knob('BENCH_LIST_LARGE', 20_000, 200_000);
    const pageSize = knob('BENCH_LIST_PAGE', 20, 1000);
    const requests = knob('BENCH_LIST_REQUESTS', 30, 1000);
    const driverRequests = knob('BENCH_LIST_DRIVER_REQUESTS', 3, 1000);
    const small = await side(ctx, smallSize, pageSize);
    const large = await side(ctx, largeSize, pageSize);
    try {
      const p50 = (r: Rate) => r.p50;
      const results: Record<`${'small' | 'large'}${'Route' | 'Driver' | 'Reads'}`, number[]> = {
        smallRoute: [],
        largeRoute: [],
        smallDriver: [],
        largeDriver: [],
        smallReads: [],
        largeReads: [],
      };
      // A warm-up of each (compiles, caches, PostgreSQL's buffers).
      for (const s of [small, large]) {
        await loop(1, 3, s.route);
        await loop(1, 3, s.reads);
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
          results[`${name}Reads`].push(p50(await loop(1, requests, s.reads)));
          results[`${name}Driver`].push(p50(await loop(1, driverRequests, s.driver)));
        }
        say(
          `list-calls round ${round} (load ${loadAverage()}): p50 ${results.smallRoute.at(-1)!.toFixed(1)} ms at ${smallSize}, ${results.largeRoute.at(-1)!.toFixed(1)} ms at ${largeSize}; ` +
            `its ${pageSize} reads by _id ${results.smallReads.at(-1)!.toFixed(1)} / ${results.largeReads.at(-1)!.toFixed(1)} ms; ` +
            `the old query ${results.smallDriver.at(-1)!.toFixed(1)} / ${results.largeDriver.at(-1)!.toFixed(1)} ms`,
        );
      }
      const k = (n: number) => `${Math.round(n / 1000)}k`;
      const label = `list-calls p50, a page of ${pageSize}, ${k(largeSize)} calls in the firm`;
      const rows: Row[] = [
        ratioRow(
          {
            id: 'list_calls_20k_ms',
            label,
            unit: 'ms',
            baselineLabel: `its ${pageSize} calls read by _id via the driver, at once`,
            target: { op: '<', limit: 50, on: 'value' },
          },
          results.largeRoute,
          results.largeReads,
        ),
        ratioRow(
          {
            id: 'list_calls_20k_vs_1k',
            label,
            unit: 'ms',
            baselineLabel: `with ${k(smallSize)}`,
            target: { op: '<=', limit: 1.5 },
            note:
              "The page's positions come from the firm's list index, a Redis sorted set read with one " +
              'ZREVRANGEBYLEX, and its calls from point reads by _id: neither grows with the firm. ' +
              'list_driver_20k_vs_1k is the query list-calls ran before, for reference.',
          },
          results.largeRoute,
          results.smallRoute,
        ),
        ratioRow(
          {
            id: 'list_driver_20k_vs_1k',
            label: `the former list query (driver) p50, ${k(largeSize)} calls`,
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
