// create-outbound-call over HTTP (the web process as a child, no workers), against:
//   - its own operations issued directly from this process at the same concurrency: exactly the
//     MongoDB and Redis commands a warm request issues (counted from outside, and checked to be
//     the same before anything is timed) — with the read cache these are the rate-limit script
//     (with the change epoch's GET), the dial gate's request step (request-peek.lua: the firm's
//     do-not-call index and the number's attempts), the call insert and the place-call job's add;
//   - a bare BullMQ queue.add of the same job;
//   - GET /healthz (what the web process does for a request that does nothing);
//   - the same request to a bare node:http server issuing the same store calls as the direct
//     baseline (bench/bare-http-server.ts): what Node's HTTP stack alone costs;
//   - the same handler under a bare Koa app in that server: what the framework alone adds;
//   - the same handler inside the web process itself (bench/bare-in-web.ts): what the process the
//     service runs in costs any handler, the bound no route of it can beat.
// Also the web process's RSS idle and under this load.
import { callsCollection, newOutboundCall } from '../../core/domain/calls/calls.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { findAgent } from '../../core/domain/agents/agents.js';
import { JOBS } from '../../jobs/table.js';
import { unlimitedLimiter } from '../lib/unlimited-limiter.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { peekIndex, rebuildDncIndex } from '../../core/domain/compliance/dnc-index.js';
import { DAY_MS } from '../../core/domain/compliance/frequency.js';
import type { Services } from '../../core/wiring/services.js';
import {
  alternate,
  cannon,
  loop,
  median,
  processCpuSeconds,
  RssSampler,
  say,
  StackCpu,
  type Rate,
} from '../lib/measure.js';
import { formatOps, opsPerCall, sameOps } from '../lib/ops.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { createApp, makeTenant, type Web } from '../lib/stack.js';
import { bareInWebEnv, setUpBareInWeb, startBareHttp } from '../lib/bare-http.js';
import { PhaseLog } from '../lib/phases.js';
import { rebuildFirmAttempts } from '../../core/domain/compliance/frequency.js';

export const createCall: Scenario = {
  name: 'create-call',
  ids: [
    'create_call_vs_direct',
    'create_call_vs_add',
    'create_call_vs_healthz',
    'create_call_vs_bare_http',
    'create_call_vs_bare_koa',
    'bare_koa_vs_bare_http',
    'bare_in_web_vs_bare_http',
    'create_call_vs_bare_in_web',
    'create_call_duties_in_web_vs_bare_http',
    'create_call_vs_duties_in_web',
    'bare_http_vs_direct',
    'web_rss_idle_mb',
    'web_rss_load_mb',
  ],
  async run(ctx) {
    const app = await createApp(ctx.stores, 'create-call');
    let bare: Web | undefined;
    try {
      const inWeb = await bareInWebEnv();
      const web = await app.startWeb(inWeb.env);
      const tenant = await makeTenant(app, web.base);
      const keys = redisKeys({ queuePrefix: app.prefix, redisCluster: false });
      // The firm's do-not-call index, as a worker builds it when the first request asks for it
      // (core/domain/compliance/dnc-index.ts; no worker runs here): the steady state is measured,
      // where the gate's request step answers "not listed" from Redis without a database read.
      // Its dial attempts marked complete too (frequency.ts), as the same first request asks.
      const services = {
        config: { queuePrefix: app.prefix, redisCluster: false },
        redis: app.redis,
        mongo: { db: app.db },
      } as unknown as Services;
      await rebuildDncIndex(services, tenant.slug);
      await rebuildFirmAttempts(services, tenant.slug);
      bare = await startBareHttp(app, tenant);
      await setUpBareInWeb(inWeb.base, web, tenant);
      const firm = (await getFirm(app.db, tenant.slug))!;
      const agent = (await findAgent(app.db, tenant.agentId))!;
      const body = {
        toNumber: '+14155550123',
        agentId: tenant.agentId,
        firmSlug: tenant.slug,
        dynamicVariables: { first_name: 'Bench', case_type: 'load test' },
      };
      const request = {
        url: `${web.base}/api/v2/create-outbound-call`,
        method: 'POST' as const,
        connections: ctx.connections,
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      };
      const createOne = async (): Promise<void> => {
        const res = await fetch(request.url, {
          method: 'POST',
          headers: request.headers,
          body: request.body,
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`create-outbound-call answered ${res.status}`);
      };

      // The direct operations: the same scripts, insert and add, from this process.
      const limiter = unlimitedLimiter(app.redis, keys, 'bench');
      const principal = {
        kind: 'firm' as const,
        firm: firm._id,
        via: 'api_key' as const,
        subject: 'bench-direct',
      };
      const calls = callsCollection(app.db);
      const direct = async (): Promise<void> => {
        await limiter.checkPrincipal(principal);
        const doc = newOutboundCall(
          { firm, agent, toNumber: '+14155550123', dynamicVariables: body.dynamicVariables },
          'simulator',
        );
        // The gate's request step beside the insert, as the route issues them.
        await Promise.all([
          peekIndex(app.redis, keys, firm._id, '+14155550123', Date.now() - DAY_MS),
          calls.insertOne(doc),
        ]);
        await app.queues.calls.add(
          JOBS.placeCall.name,
          { callId: doc._id, firm: doc.firm },
          { jobId: doc._id },
        );
      };
      const bareAdd = async (i: number): Promise<void> => {
        const callId = `call_bare${i}_${Math.random().toString(36).slice(2)}`;
        await app.queues.calls.add(JOBS.placeCall.name, { callId, firm: firm._id }, { jobId: callId });
      };

      // Warm both sides, then count what one warm request issues and what one direct call does.
      for (let i = 0; i < 30; i++) await createOne();
      for (let i = 0; i < 30; i++) await direct();
      const routeOps = await opsPerCall(ctx.stores.redisUrl, ctx.stores.mongodbUri, 20, createOne);
      const directOps = await opsPerCall(ctx.stores.redisUrl, ctx.stores.mongodbUri, 20, direct);
      say(`create-outbound-call, one warm request: ${formatOps(routeOps)}`);
      say(`direct baseline, one call:            ${formatOps(directOps)}`);
      const same = sameOps(routeOps, directOps);
      if (!same) say('the direct baseline does NOT issue the same operations as the route (see above)');

      const idleRss = web.rss();
      const load = new RssSampler(web.pid);
      const webCpu: number[] = [];
      const named = new Map([[web.pid, 'web']]);
      let routeCores = '';
      let directCores = '';
      const directCpu: number[] = [];
      const bareCpu: number[] = [];
      const koaCpu: number[] = [];
      const inWebCpu: number[] = [];
      const dutiesCpu: number[] = [];
      // Profiled, the web's samples are cut by step: the route against the bare handler it serves,
      // the route against its duties done without Koa, and those against the bare handler.
      const phases = PhaseLog.of('create-call', [
        ['route', 'bare in the web'],
        ['route', 'duties in the web'],
        ['duties in the web', 'bare in the web'],
      ]);
      const rates = await alternate(
        ctx.rounds,
        ctx.seconds,
        {
          route: async (n, measured) => {
            load.start();
            const c0 = processCpuSeconds(web.pid);
            const stack = new StackCpu(named);
            try {
              const r = await phases.time('route', web, () => cannon(request, n), measured);
              if (measured) webCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
              routeCores = stack.read();
              return r;
            } finally {
              load.stop();
            }
          },
          direct: async (n, measured) => {
            const c0 = process.cpuUsage();
            const stack = new StackCpu(named);
            const r = await loop(ctx.connections, n, direct);
            const used = process.cpuUsage(c0);
            if (measured) directCpu.push((used.user + used.system) / r.ok);
            directCores = stack.read();
            return r;
          },
          add: (n) => loop(ctx.connections, n, bareAdd),
          healthz: (n) => cannon({ url: `${web.base}/healthz`, connections: ctx.connections }, n),
          bare: async (n, measured) => {
            const c0 = processCpuSeconds(bare!.pid);
            const r = await cannon({ ...request, url: `${bare!.base}/create` }, n);
            if (measured) bareCpu.push(((processCpuSeconds(bare!.pid) - c0) * 1e6) / r.ok);
            return r;
          },
          koa: async (n, measured) => {
            const c0 = processCpuSeconds(bare!.pid);
            const r = await cannon({ ...request, url: `${bare!.base}/koa/create` }, n);
            if (measured) koaCpu.push(((processCpuSeconds(bare!.pid) - c0) * 1e6) / r.ok);
            return r;
          },
          inWeb: async (n, measured) => {
            const c0 = processCpuSeconds(web.pid);
            const r = await phases.time(
              'bare in the web',
              web,
              () => cannon({ ...request, url: `${inWeb.base}/create` }, n),
              measured,
            );
            if (measured) inWebCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
            return r;
          },
          duties: async (n, measured) => {
            const c0 = processCpuSeconds(web.pid);
            const r = await phases.time(
              'duties in the web',
              web,
              () => cannon({ ...request, url: `${inWeb.base}/api/v2/create-outbound-call` }, n),
              measured,
            );
            if (measured) dutiesCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
            return r;
          },
        },
        {
          log: (round, r) =>
            say(
              `create-call round ${round}: route ${r.route.rate.toFixed(0)}/s (p50 ${r.route.p50} ms, ${r.route.failed} failed) · ` +
                `direct ${r.direct.rate.toFixed(0)}/s · add ${r.add.rate.toFixed(0)}/s · healthz ${r.healthz.rate.toFixed(0)}/s · ` +
                `bare node:http ${r.bare.rate.toFixed(0)}/s · bare Koa ${r.koa.rate.toFixed(0)}/s · bare in the web ${r.inWeb.rate.toFixed(0)}/s · ` +
                `duties in the web ${r.duties.rate.toFixed(0)}/s`,
            ),
        },
      );
      const failed = rates.route.reduce((a, r) => a + r.failed, 0);
      const of = (xs: Rate[]) => xs.map((x) => x.rate);
      const rows: Row[] = [
        ratioRow(
          {
            id: 'create_call_vs_direct',
            label: `create-outbound-call (c=${ctx.connections})`,
            unit: 'req/s',
            baselineLabel: 'its own ops issued directly',
            target: { op: '>=', limit: 0.8 },
            note:
              `A warm request issues ${formatOps(routeOps)}; the direct baseline issues ${formatOps(directOps)}` +
              `${same ? ' (the same)' : ' (NOT the same)'}, ${ctx.connections} in flight. ` +
              `CPU per request in the web process ${median(webCpu).toFixed(0)} µs; per direct call in the bench process ${median(directCpu).toFixed(0)} µs (medians). ` +
              `Last round, route: ${routeCores}; direct: ${directCores}.` +
              (failed > 0 ? ` ${failed} requests did not answer 200.` : ''),
          },
          of(rates.route),
          of(rates.direct),
        ),
        ratioRow(
          {
            id: 'create_call_vs_add',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: 'bare queue.add',
          },
          of(rates.route),
          of(rates.add),
        ),
        ratioRow(
          {
            id: 'create_call_vs_healthz',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: 'GET /healthz',
          },
          of(rates.route),
          of(rates.healthz),
        ),
        ratioRow(
          {
            id: 'create_call_vs_bare_http',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: 'bare node:http doing the same store calls',
            note:
              `CPU per request in the web process ${median(webCpu).toFixed(0)} µs, in the bare server ` +
              `${median(bareCpu).toFixed(0)} µs, under bare Koa ${median(koaCpu).toFixed(0)} µs (medians).`,
          },
          of(rates.route),
          of(rates.bare),
        ),
        ratioRow(
          {
            id: 'create_call_vs_bare_koa',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: "the bare server's handler under a bare Koa app",
          },
          of(rates.route),
          of(rates.koa),
        ),
        ratioRow(
          {
            id: 'bare_koa_vs_bare_http',
            label: 'bare Koa, create-call store calls',
            unit: 'req/s',
            baselineLabel: 'the same handler on bare node:http',
            note:
              "The bare server's handler as the only middleware of a Koa app: what Koa itself (its context, " +
              'dispatch and response) costs before any of the service, a bound the route cannot beat while it runs on Koa.',
          },
          of(rates.koa),
          of(rates.bare),
        ),
        ratioRow(
          {
            id: 'bare_in_web_vs_bare_http',
            label: 'bare handler in the web process, create-call store calls',
            unit: 'req/s',
            baselineLabel: 'the same handler on bare node:http in a process of its own',
            note:
              "The bare server's handler, unchanged, served from inside the web process (bench/bare-in-web.ts) " +
              "beside the service's routes: what the process the service runs in (its heap, timers and collector) " +
              'costs a handler that does nothing of the service. No route of that process can beat it: the bound ' +
              `of create_call_vs_bare_http. CPU per request there ${median(inWebCpu).toFixed(0)} µs, in the bare server ` +
              `${median(bareCpu).toFixed(0)} µs (medians).`,
          },
          of(rates.inWeb),
          of(rates.bare),
        ),
        ratioRow(
          {
            id: 'create_call_vs_bare_in_web',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: 'the bare handler in the same web process',
          },
          of(rates.route),
          of(rates.inWeb),
        ),
        ratioRow(
          {
            id: 'create_call_duties_in_web_vs_bare_http',
            label: "create-outbound-call's duties without Koa, in the web process",
            unit: 'req/s',
            baselineLabel: 'bare node:http doing the same store calls',
            note:
              "Everything the route does for a request, by the service's own functions in its order, on bare " +
              'node:http in the web process (bench/lib/duties-handler.ts): the request id and latency histogram, the ' +
              "token, the principal's rate limit, the body's parser with its NUL and depth checks, the schema, the " +
              "route's handler (Idempotency-Key, firm, agent, dial gate, insert, job), the route's headers. What no " +
              `route doing them can beat. CPU per request there ${median(dutiesCpu).toFixed(0)} µs, in the bare server ` +
              `${median(bareCpu).toFixed(0)} µs, the bare handler in the web ${median(inWebCpu).toFixed(0)} µs (medians).`,
          },
          of(rates.duties),
          of(rates.bare),
        ),
        ratioRow(
          {
            id: 'create_call_vs_duties_in_web',
            label: 'create-outbound-call',
            unit: 'req/s',
            baselineLabel: "the route's duties without Koa, in the same web process",
            note: `What Koa, the router and the middleware chain add to the duties: CPU per request through the route ${median(webCpu).toFixed(0)} µs, the duties ${median(dutiesCpu).toFixed(0)} µs (medians).`,
          },
          of(rates.route),
          of(rates.duties),
        ),
        ratioRow(
          {
            id: 'bare_http_vs_direct',
            label: 'bare node:http, create-call store calls',
            unit: 'req/s',
            baselineLabel: 'the same calls issued directly',
            note:
              'The bare server (bench/bare-http-server.ts) parses the JSON body and issues the direct ' +
              "baseline's calls in a node:http handler, nothing else: this ratio is what Node's HTTP stack " +
              '(one more socket per request, its parser and response) costs before any of the service.',
          },
          of(rates.bare),
          of(rates.direct),
        ),
        ratioRow(
          { id: 'web_rss_idle_mb', label: 'web RSS idle (warm)', unit: 'MiB', baselineLabel: 'itself' },
          [idleRss],
          [idleRss],
        ),
        ratioRow(
          {
            id: 'web_rss_load_mb',
            label: 'web RSS peak, create-call load',
            unit: 'MiB',
            baselineLabel: 'idle',
          },
          [load.peak],
          [idleRss],
        ),
      ];
      say(`create-call: median route ${median(of(rates.route)).toFixed(0)} req/s`);
      return rows;
    } finally {
      await app.close();
    }
  },
};
