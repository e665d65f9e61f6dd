// Events out (docs/events.md), with a real worker process consuming the `webhooks` queue and
// the events recorded from here through recordEvent, as a change site records them:
//   - webhooks-throughput: 5,000 events (one subject each) to an endpoint answering in 50 ms:
//     deliveries per second and CPU per delivery, beside a bare `fetch` loop posting the same
//     bodies to the same receiver at the queue's concurrency (the same-run ratio; target ≥ 0.5).
//   - webhooks-order: 200 subjects × 5 events to an endpoint failing 30 % of requests at random
//     (seeded) and stalling 10 s on 1 %, beside a healthy endpoint of the same firm and another
//     firm's, the events recorded at a steady pace (BENCH_WEBHOOK_RATE, default 20/s): whether
//     each subject's first successful deliveries came in order, and the healthy endpoints' delay
//     (answered − recorded), p50 and p99.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../core/platform/config.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices, type Services } from '../../core/wiring/services.js';
import { recordEvents } from '../../core/domain/events/record-event.js';
import type { EventInput } from '../../core/domain/events/event-types.js';
import { QUEUE_SETTINGS, QUEUE } from '../../jobs/queues.js';
import { seededRng } from '../../scripts/chaos/rng.js';
import { percentile, processCpuSeconds, say, StackCpu } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, rand, type App } from '../lib/stack.js';

interface Arrival {
  path: string;
  id: string;
  status: number;
  at: number;
  body: string;
}

/** A receiver on 127.0.0.1: `answer` decides each request's status and delay. */
async function receiver(
  answer: (path: string) => { status: number; delayMs: number },
): Promise<{ server: Server; url: (path: string) => string; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const { status, delayMs } = answer(path);
      setTimeout(() => {
        arrivals.push({
          path,
          id: String(req.headers['webhook-id'] ?? ''),
          status,
          at: Date.now(),
          body: Buffer.concat(chunks).toString('utf8'),
        });
        res.writeHead(status).end('ok');
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, url: (path) => `http://127.0.0.1:${port}${path}`, arrivals };
}

async function firmWithEndpoints(app: App, base: string, urls: string[]): Promise<string> {
  const slug = `bench-${rand()}`;
  await api(base, 'POST', '/api/firms', app.adminKey, { slug, name: 'Bench firm' });
  for (const url of urls)
    await api(base, 'POST', '/api/webhook-endpoints', app.adminKey, {
      firmSlug: slug,
      url,
      events: ['lead.*'],
    });
  return slug;
}

function servicesOf(app: App): Services {
  return createServices(loadConfig(app.env), createLogger('warn', 'bench'), 'producer');
}

/** Records `events` in batches of 100 (a step records its events together). */
async function record(services: Services, events: EventInput[]): Promise<void> {
  for (let i = 0; i < events.length; i += 100) await recordEvents(services, events.slice(i, i + 100));
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

async function throughput(ctx: Parameters<Scenario['run']>[0]): Promise<Row> {
  const N = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 5000);
  const rx = await receiver(() => ({ status: 200, delayMs: 50 }));
  const app = await createApp(ctx.stores, 'webhooks-throughput');
  const web = await app.startWeb();
  const worker = await app.startWorker('worker', { WORKER_QUEUES: QUEUE.webhooks });
  const services = servicesOf(app);
  try {
    const slug = await firmWithEndpoints(app, web.base, [rx.url('/hooks')]);
    const t0 = Date.now();
    const events: EventInput[] = Array.from({ length: N }, (_, i) => ({
      firm: slug,
      type: 'lead.updated',
      subject: `lead_${i}`,
      key: 'v1',
      occurred_at: new Date(t0 + i),
      data: {
        id: `lead_${i}`,
        name: 'Jordan Lee',
        email: 'jordan.lee@example.com',
        case_type: 'Personal Injury',
      },
    }));
    const cpu0 = processCpuSeconds(worker.pid);
    const stack = new StackCpu(new Map([[worker.pid, 'worker']]));
    const start = performance.now();
    await record(services, events);
    await until(() => rx.arrivals.length >= N, 600_000);
    const seconds = (performance.now() - start) / 1000;
    const serviceRate = rx.arrivals.length / seconds;
    const cpuMs = ((processCpuSeconds(worker.pid) - cpu0) * 1000) / rx.arrivals.length;
    say(`webhooks-throughput: ${rx.arrivals.length} deliveries in ${seconds.toFixed(1)} s; ${stack.read()}`);

    // The bare loop: the same bodies, POSTed by `fetch` at the queue's concurrency.
    const bodies = rx.arrivals.map((a) => a.body);
    rx.arrivals.length = 0;
    const concurrency = QUEUE_SETTINGS[QUEUE.webhooks].concurrency ?? 10;
    const own0 = process.cpuUsage();
    const bareStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++]!;
          const res = await fetch(rx.url('/bare'), {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          await res.text();
        }
      }),
    );
    const bareSeconds = (performance.now() - bareStart) / 1000;
    const bareRate = bodies.length / bareSeconds;
    const own = process.cpuUsage(own0);
    const bareCpuMs = (own.user + own.system) / 1000 / bodies.length;
    say(
      `webhooks-throughput: service ${serviceRate.toFixed(0)}/s, ${cpuMs.toFixed(2)} ms worker CPU a delivery; bare fetch ${bareRate.toFixed(0)}/s, ${bareCpuMs.toFixed(2)} ms CPU a request (receiver included)`,
    );
    return {
      ...ratioRow(
        {
          id: 'webhooks-throughput',
          label: `webhook deliveries/s (${N} events, endpoint answering in 50 ms)`,
          unit: '/s',
          baselineLabel: `bare fetch loop to the same receiver, ${concurrency} at once, /s`,
          target: { op: '>=', limit: 0.5 },
        },
        [serviceRate],
        [bareRate],
      ),
      note: `worker CPU ${cpuMs.toFixed(2)} ms a delivery; bare fetch ${bareCpuMs.toFixed(2)} ms a request (bench process, receiver included)`,
    };
  } finally {
    await services.close();
    await app.close();
    rx.server.close();
  }
}

async function order(ctx: Parameters<Scenario['run']>[0]): Promise<Row> {
  const SUBJECTS = Number(process.env.BENCH_WEBHOOK_SUBJECTS ?? 200);
  const EVENTS = 5;
  const rng = seededRng(31).fork('webhooks-order');
  const rx = await receiver((path) => {
    if (path !== '/flaky') return { status: 200, delayMs: 0 };
    if (rng.chance(0.01)) return { status: 200, delayMs: 10_000 };
    return { status: rng.chance(0.3) ? 500 : 200, delayMs: 0 };
  });
  const app = await createApp(ctx.stores, 'webhooks-order', {
    WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,2s,2s,2s,2s,2s,2s,2s,2s',
    WEBHOOK_ORDER_WAIT_MS: '600000',
  });
  const web = await app.startWeb();
  await app.startWorker('worker', { WORKER_QUEUES: QUEUE.webhooks });
  const services = servicesOf(app);
  try {
    const firm = await firmWithEndpoints(app, web.base, [rx.url('/flaky'), rx.url('/healthy')]);
    const other = await firmWithEndpoints(app, web.base, [rx.url('/other')]);
    const recordedAt = new Map<string, number>();
    const start = Date.now();
    // Paced (BENCH_WEBHOOK_RATE events a second, both firms together), below what the worker
    // delivers: the healthy endpoints' delay then shows what the failing one costs them, not a
    // backlog of the whole burst.
    const rate = Number(process.env.BENCH_WEBHOOK_RATE ?? 20);
    const all: EventInput[] = [];
    for (let version = 0; version < EVENTS; version++) {
      for (let s = 0; s < SUBJECTS; s++) {
        for (const slug of [firm, other]) {
          all.push({
            firm: slug,
            type: version === 0 ? 'lead.created' : 'lead.updated',
            subject: `lead_${s}`,
            key: `v${version}`,
            occurred_at: new Date(start + version * 100_000 + s),
            data: { id: `lead_${s}`, version },
          });
        }
      }
    }
    const chunk = Math.max(1, Math.round(rate / 4));
    for (let i = 0; i < all.length; i += chunk) {
      const due = start + (i / rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
      const at = Date.now();
      const ids = await recordEvents(services, all.slice(i, i + chunk));
      for (const id of ids) recordedAt.set(id, at);
    }
    const total = SUBJECTS * EVENTS;
    const distinct = (path: string) =>
      new Set(rx.arrivals.filter((a) => a.path === path && a.status === 200).map((a) => a.id)).size;
    const done = await until(
      () => distinct('/flaky') >= total && distinct('/healthy') >= total && distinct('/other') >= total,
      600_000,
    );
    // Per subject, the versions in the order of their first successful delivery.
    const seen = new Set<string>();
    const versions = new Map<string, number[]>();
    for (const a of rx.arrivals) {
      if (a.path !== '/flaky' || a.status !== 200 || seen.has(a.id)) continue;
      seen.add(a.id);
      const { data } = JSON.parse(a.body) as { data: { id: string; version: number } };
      versions.set(data.id, [...(versions.get(data.id) ?? []), data.version]);
    }
    const inOrder = [...versions.values()].filter((v) => v.join() === '0,1,2,3,4').length;
    const delays = (path: string) =>
      rx.arrivals
        .filter((a) => a.path === path && a.status === 200)
        .map((a) => a.at - (recordedAt.get(a.id) ?? a.at))
        .sort((x, y) => x - y);
    const healthy = [...delays('/healthy'), ...delays('/other')].sort((x, y) => x - y);
    const flaky = delays('/flaky');
    const failures = rx.arrivals.filter((a) => a.path === '/flaky' && a.status === 500).length;
    const stalls = rx.arrivals.filter((a) => a.path === '/flaky' && a.status === 200).length;
    const p = (xs: number[], q: number) => (percentile(xs, q) / 1000).toFixed(2);
    say(
      `webhooks-order: ${done ? 'all delivered' : 'NOT all delivered'}; first-delivery order held for ${inOrder}/${SUBJECTS} subjects; flaky endpoint ${failures} answers 500 of ${failures + stalls}; healthy endpoints' delay p50 ${p(healthy, 0.5)} s, p99 ${p(healthy, 0.99)} s, max ${p(healthy, 1)} s; the flaky one's p50 ${p(flaky, 0.5)} s, p99 ${p(flaky, 0.99)} s`,
    );
    return {
      ...ratioRow(
        {
          id: 'webhooks-order',
          label: `healthy endpoints' delay p99, s (${SUBJECTS} subjects × 5 events)`,
          unit: 's',
          baselineLabel: "the failing, stalling endpoint's delay p99, s",
        },
        [percentile(healthy, 0.99) / 1000],
        [percentile(flaky, 0.99) / 1000],
      ),
      note: `order held for ${inOrder}/${SUBJECTS} subjects; healthy p50 ${p(healthy, 0.5)} s; ${failures} failures injected`,
    };
  } finally {
    await services.close();
    await app.close();
    rx.server.close();
  }
}

export const webhooksOut: Scenario = {
  name: 'webhooks-out',
  ids: ['webhooks-throughput', 'webhooks-order'],
  async run(ctx) {
    const wanted = (process.argv.find((a) => a.startsWith('--only=')) ?? '')
      .slice('--only='.length)
      .split(',');
    const all = wanted.length === 1 && wanted[0] === '' ? true : wanted.includes('webhooks-out');
    const rows: Row[] = [];
    if (all || wanted.includes('webhooks-order')) rows.push(await order(ctx));
    if (all || wanted.includes('webhooks-throughput')) rows.push(await throughput(ctx));
    return rows;
  },
};
