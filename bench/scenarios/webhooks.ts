// The webhook receivers over HTTP (the web process as a child, no workers), each delivery a
// new event signed as its sender signs it, against a bare BullMQ queue.add of the same job
// (same payload, id and options) at the same concurrency, and against the receiver's own
// operations issued directly (the per-firm webhook rate-limit script, then the add):
//   - POST /api/v2/{firm}/webhook: Retell call_analyzed bodies (~3 KB) with x-retell-signature;
//   - POST /api/v2/{firm}/booking-webhook: Cal.com BOOKING_CREATED with X-Cal-Signature-256.
// The call webhook also against a bare node:http server issuing the same store calls
// (bench/bare-http-server.ts): what Node's HTTP stack alone costs; and against that handler
// inside the web process itself (bench/bare-in-web.ts): the bound no route of that process can beat.
import { createHmac, randomBytes } from 'node:crypto';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { snapshotBookingEvent } from '../../core/domain/bookings/booking-event.js';
import type { BookingPayloadInput } from '../../core/domain/bookings/booking-event.js';
import { JOBS } from '../../jobs/table.js';
import type { JobDefinition, PayloadOf } from '../../jobs/define.js';
import { noteQueuedBookingEvent } from '../../core/domain/deliveries/outbox-bookings.js';
import { unlimitedLimiter } from '../lib/unlimited-limiter.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import {
  alternate,
  cannon,
  loop,
  median,
  processCpuSeconds,
  say,
  StackCpu,
  type Rate,
} from '../lib/measure.js';
import { formatOps, opsPerCall, sameOps } from '../lib/ops.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, makeTenant, rand, type App, type Web } from '../lib/stack.js';
import { bareInWebEnv, setUpBareInWeb, startBareHttp } from '../lib/bare-http.js';
import { PhaseLog } from '../lib/phases.js';

/** A call_analyzed body as Retell sends it (about 3 KB), for a fresh call id. */
function callAnalyzed(n: number) {
  const start = Date.now() - 200_000;
  const lines = [
    'Agent: Thank you for calling. May I have your full name?',
    'User: Jordan Lee.',
    'Agent: What number can we reach you on?',
    'User: 415 555 0123.',
    'Agent: And your email address?',
    'User: jordan.lee@example.com',
    'Agent: Briefly, what happened?',
    'User: I was rear-ended at a red light last week and my neck still hurts.',
  ];
  return {
    event: 'call_analyzed' as const,
    call: {
      call_type: 'phone_call',
      call_id: `bench_${rand()}_${n}`,
      agent_id: 'agent_bench',
      agent_version: 1,
      call_status: 'ended',
      direction: 'inbound',
      from_number: '+14155550123',
      to_number: '+14155550100',
      start_timestamp: start,
      end_timestamp: start + 185_000,
      duration_ms: 185_000,
      disconnection_reason: 'user_hangup',
      transcript: `${lines.join('\n')}\n`,
      transcript_object: lines.map((l) => ({
        role: l.startsWith('Agent') ? 'agent' : 'user',
        content: l,
        words: [],
      })),
      metadata: {},
      retell_llm_dynamic_variables: { customer_name: 'Jordan' },
      call_analysis: {
        call_summary: 'Jordan Lee was rear-ended last week and has neck pain; wants a callback.',
        user_sentiment: 'Negative',
        call_successful: true,
        in_voicemail: false,
        custom_analysis_data: {
          name: 'Jordan Lee',
          phone_number: '+14155550123',
          email: 'jordan.lee@example.com',
          case_type: 'Personal Injury',
          urgency: 'normal',
        },
      },
    },
  };
}

const BOOKING_START = Date.now() + 7 * 24 * 3600_000;

/** One Cal.com BOOKING_CREATED delivery for booking `i`, as Cal.com's webhook code sends it. */
function bookingDelivery(i: number) {
  return {
    triggerEvent: 'BOOKING_CREATED' as const,
    createdAt: new Date().toISOString(),
    payload: {
      type: '30min',
      title: 'Initial consultation',
      description: 'Bench booking',
      startTime: new Date(BOOKING_START + i * 60_000).toISOString(),
      endTime: new Date(BOOKING_START + i * 60_000 + 1800_000).toISOString(),
      organizer: { id: 1, name: 'Alex Counsel', email: 'alex@lawfirm.test', timeZone: 'America/New_York' },
      attendees: [{ email: `client${i}@example.com`, name: `Client ${i}`, timeZone: 'Europe/Paris' }],
      location: 'https://cal.com/video/bench',
      uid: `bench${rand()}${i}`,
      bookingId: i,
      status: 'ACCEPTED',
    },
  };
}

interface Receiver {
  id: string;
  label: string;
  path: (slug: string) => string;
  /** The signed request for delivery `n`: its raw body and headers. */
  sign: (n: number, secret: string) => { raw: string; headers: Record<string, string> };
  /** The job the receiver enqueues for the same delivery, and its definition. */
  job: (n: number, slug: string) => { def: JobDefinition<never>; data: unknown };
  /** What the route writes before the add, issued the same way by the direct baseline. */
  beforeAdd?: (app: App, data: unknown) => Promise<void>;
  settings: (secret: string) => Record<string, unknown>;
}

const RECEIVERS: Receiver[] = [
  {
    id: 'webhook',
    label: 'call webhook, signed call_analyzed',
    path: (slug) => `/api/v2/${slug}/webhook`,
    sign: (n, secret) => {
      const raw = JSON.stringify(callAnalyzed(n));
      const ts = Date.now();
      const d = createHmac('sha256', secret)
        .update(raw + ts)
        .digest('hex');
      return { raw, headers: { 'content-type': 'application/json', 'x-retell-signature': `v=${ts},d=${d}` } };
    },
    job: (n, slug) => {
      const body = callAnalyzed(n);
      return {
        def: JOBS.callEvent as unknown as JobDefinition<never>,
        data: {
          firm: slug,
          event: body.event,
          call: snapshotProviderCall(body.call),
          received_at: Date.now(),
        },
      };
    },
    settings: (secret) => ({ voice_webhook_secret: secret }),
  },
  {
    id: 'booking_webhook',
    label: 'booking webhook, signed BOOKING_CREATED',
    path: (slug) => `/api/v2/${slug}/booking-webhook`,
    sign: (n, secret) => {
      const raw = JSON.stringify(bookingDelivery(n));
      return {
        raw,
        headers: {
          'content-type': 'application/json',
          'X-Cal-Signature-256': createHmac('sha256', secret).update(raw).digest('hex'),
        },
      };
    },
    job: (n, slug) => {
      const raw = JSON.stringify(bookingDelivery(n));
      const body = JSON.parse(raw) as ReturnType<typeof bookingDelivery>;
      return {
        def: JOBS.bookingEvent as unknown as JobDefinition<never>,
        data: snapshotBookingEvent({
          firm: slug,
          trigger: body.triggerEvent,
          createdAt: body.createdAt,
          payload: body.payload as unknown as BookingPayloadInput,
          rawBody: raw,
          receivedAt: Date.now(),
        }),
      };
    },
    // The booking's note, so its reminders wait for the event (core/domain/deliveries/outbox-bookings.ts).
    beforeAdd: (app, data) => {
      const event = data as PayloadOf<typeof JOBS.bookingEvent>;
      return noteQueuedBookingEvent(app.db, event, JOBS.bookingEvent.id!(event));
    },
    settings: (secret) => ({ booking_webhook_secret: secret, notification_emails: ['desk@lawfirm.test'] }),
  },
];

/** queue.add of a job exactly as `enqueue` adds it (the definition's id and options). */
async function add(app: App, def: JobDefinition<never>, data: unknown): Promise<void> {
  await app.queues[def.queue].add(def.name, data, {
    ...def.options,
    ...(def.id === undefined ? {} : { jobId: def.id(data as never) }),
  });
}

export const webhooks: Scenario = {
  name: 'webhooks',
  ids: [
    'webhook_vs_add',
    'webhook_vs_direct',
    'webhook_vs_bare_http',
    'webhook_vs_bare_koa',
    'webhook_bare_koa_vs_bare_http',
    'webhook_bare_in_web_vs_bare_http',
    'webhook_vs_bare_in_web',
    'webhook_duties_in_web_vs_bare_http',
    'webhook_vs_duties_in_web',
    'booking_webhook_vs_add',
    'booking_webhook_vs_direct',
  ],
  async run(ctx) {
    const app = await createApp(ctx.stores, 'webhooks');
    const rows: Row[] = [];
    let bareServer: Web | undefined;
    // Profiled, the web's samples are cut by step: the route against the bare handler it serves.
    // The route against its duties done without Koa, and those against the bare handler.
    const phases = PhaseLog.of('webhooks', [
      ['webhook route', 'webhook bare in the web'],
      ['webhook route', 'webhook duties in the web'],
      ['webhook duties in the web', 'webhook bare in the web'],
    ]);
    try {
      const inWeb = await bareInWebEnv();
      const web = await app.startWeb(inWeb.env);
      const secret = `whsec_${randomBytes(16).toString('hex')}`;
      const limiter = unlimitedLimiter(
        app.redis,
        redisKeys({ queuePrefix: app.prefix, redisCluster: false }),
        'bench',
      );
      for (const receiver of RECEIVERS) {
        const slug = `bench-${rand()}`;
        await api(web.base, 'POST', '/api/firms', app.adminKey, {
          slug,
          name: 'Bench firm',
          settings: receiver.settings(secret),
        });
        // The bare server needs the firm's agent only for its create path.
        if (receiver.id === 'webhook' && bareServer === undefined) {
          const tenant = await makeTenant(app, web.base, receiver.settings(secret));
          bareServer = await startBareHttp(app, { slug, agentId: tenant.agentId, secret });
          await setUpBareInWeb(inWeb.base, web, { slug, agentId: tenant.agentId, secret });
        }
        const bareBase = receiver.id === 'webhook' ? bareServer?.base : undefined;
        let n = 0;
        const deliver = async (): Promise<void> => {
          const { raw, headers } = receiver.sign(n++, secret);
          const res = await fetch(`${web.base}${receiver.path(slug)}`, {
            method: 'POST',
            headers,
            body: raw,
          });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${receiver.id} answered ${res.status}`);
        };
        const direct = async (i: number): Promise<void> => {
          // As the route does for a signed delivery: a look before the body, a count after it.
          await limiter.checkWebhook(slug, false);
          await limiter.countWebhook(slug);
          const { def, data } = receiver.job(i, slug);
          await receiver.beforeAdd?.(app, data);
          await add(app, def, data);
        };
        const bare = async (i: number): Promise<void> => {
          const { def, data } = receiver.job(i, slug);
          await add(app, def, data);
        };
        for (let i = 0; i < 30; i++) await deliver();
        const routeOps = await opsPerCall(ctx.stores.redisUrl, ctx.stores.mongodbUri, 20, deliver);
        const directOps = await opsPerCall(ctx.stores.redisUrl, ctx.stores.mongodbUri, 20, direct);
        say(`${receiver.id}, one warm delivery: ${formatOps(routeOps)}`);
        say(`${receiver.id} direct baseline:    ${formatOps(directOps)}`);
        const same = sameOps(routeOps, directOps);
        const webCpu: number[] = [];
        const bareCpu: number[] = [];
        const koaCpu: number[] = [];
        const inWebCpu: number[] = [];
        const dutiesCpu: number[] = [];
        let routeCores = '';
        /** Signed deliveries to `base` + `path` through autocannon. */
        const signedCannon = (base: string, path: string) => (amount: number) =>
          cannon(
            {
              url: base,
              connections: ctx.connections,
              requests: [
                {
                  method: 'POST',
                  path,
                  setupRequest: (req) => {
                    const { raw, headers } = receiver.sign(n++, secret);
                    return { ...req, body: raw, headers };
                  },
                },
              ],
            },
            amount,
          );
        const steps = {
          route: async (amount: number, measured: boolean) => {
            const c0 = processCpuSeconds(web.pid);
            const stack = new StackCpu(new Map([[web.pid, 'web']]));
            const r = await phases.time(
              `${receiver.id} route`,
              web,
              () => signedCannon(web.base, receiver.path(slug))(amount),
              measured,
            );
            if (measured) webCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
            routeCores = stack.read();
            return r;
          },
          add: (amount: number) => loop(ctx.connections, amount, bare),
          direct: (amount: number) => loop(ctx.connections, amount, direct),
        };
        const log = (
          round: number,
          r: {
            route: Rate;
            add: Rate;
            direct: Rate;
            bareHttp?: Rate;
            bareKoa?: Rate;
            inWeb?: Rate;
            duties?: Rate;
          },
        ) =>
          say(
            `${receiver.id} round ${round}: route ${r.route.rate.toFixed(0)}/s (p50 ${r.route.p50} ms, ${r.route.failed} failed) · ` +
              `add ${r.add.rate.toFixed(0)}/s · direct ${r.direct.rate.toFixed(0)}/s` +
              (r.bareHttp === undefined ? '' : ` · bare node:http ${r.bareHttp.rate.toFixed(0)}/s`) +
              (r.bareKoa === undefined ? '' : ` · bare Koa ${r.bareKoa.rate.toFixed(0)}/s`) +
              (r.inWeb === undefined ? '' : ` · bare in the web ${r.inWeb.rate.toFixed(0)}/s`) +
              (r.duties === undefined ? '' : ` · duties in the web ${r.duties.rate.toFixed(0)}/s`),
          );
        const rates =
          bareBase === undefined
            ? {
                ...(await alternate(ctx.rounds, ctx.seconds, steps, { log })),
                bareHttp: [] as Rate[],
                bareKoa: [] as Rate[],
                inWeb: [] as Rate[],
                duties: [] as Rate[],
              }
            : await alternate(
                ctx.rounds,
                ctx.seconds,
                {
                  ...steps,
                  bareHttp: async (amount: number, measured: boolean) => {
                    const c0 = processCpuSeconds(bareServer!.pid);
                    const r = await signedCannon(bareBase, '/webhook')(amount);
                    if (measured) bareCpu.push(((processCpuSeconds(bareServer!.pid) - c0) * 1e6) / r.ok);
                    return r;
                  },
                  bareKoa: async (amount: number, measured: boolean) => {
                    const c0 = processCpuSeconds(bareServer!.pid);
                    const r = await signedCannon(bareBase, '/koa/webhook')(amount);
                    if (measured) koaCpu.push(((processCpuSeconds(bareServer!.pid) - c0) * 1e6) / r.ok);
                    return r;
                  },
                  inWeb: async (amount: number, measured: boolean) => {
                    const c0 = processCpuSeconds(web.pid);
                    const r = await phases.time(
                      `${receiver.id} bare in the web`,
                      web,
                      () => signedCannon(inWeb.base, '/webhook')(amount),
                      measured,
                    );
                    if (measured) inWebCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
                    return r;
                  },
                  duties: async (amount: number, measured: boolean) => {
                    const c0 = processCpuSeconds(web.pid);
                    const r = await phases.time(
                      `${receiver.id} duties in the web`,
                      web,
                      () => signedCannon(inWeb.base, receiver.path(slug))(amount),
                      measured,
                    );
                    if (measured) dutiesCpu.push(((processCpuSeconds(web.pid) - c0) * 1e6) / r.ok);
                    return r;
                  },
                },
                { log },
              );
        const of = (xs: Rate[]) => xs.map((x) => x.rate);
        const failed = rates.route.reduce((a, r) => a + r.failed, 0);
        rows.push(
          ratioRow(
            {
              id: `${receiver.id}_vs_add`,
              label: `${receiver.label} (c=${ctx.connections})`,
              unit: 'req/s',
              baselineLabel: 'bare queue.add of the same job',
              ...(receiver.id === 'webhook' ? { target: { op: '>=' as const, limit: 0.25 } } : {}),
              note:
                `A warm delivery issues ${formatOps(routeOps)} (no database read: the firm comes from the read cache); ` +
                `the web process spends ${median(webCpu).toFixed(0)} µs of CPU per delivery (median); last round, ${routeCores}` +
                (failed > 0 ? `; ${failed} deliveries did not answer 200` : '') +
                '.',
            },
            of(rates.route),
            of(rates.add),
          ),
          ratioRow(
            {
              id: `${receiver.id}_vs_direct`,
              label: receiver.label,
              unit: 'req/s',
              baselineLabel: `its own ops issued directly${same ? '' : ' (NOT the same ops)'}`,
            },
            of(rates.route),
            of(rates.direct),
          ),
        );
        if (rates.bareHttp.length > 0) {
          rows.push(
            ratioRow(
              {
                id: `${receiver.id}_vs_bare_http`,
                label: receiver.label,
                unit: 'req/s',
                baselineLabel: 'bare node:http doing the same store calls, HMAC and parse',
                note:
                  `CPU per delivery in the web process ${median(webCpu).toFixed(0)} µs, in the bare server ` +
                  `${median(bareCpu).toFixed(0)} µs, under bare Koa ${median(koaCpu).toFixed(0)} µs (medians).`,
              },
              of(rates.route),
              of(rates.bareHttp),
            ),
            ratioRow(
              {
                id: `${receiver.id}_vs_bare_koa`,
                label: receiver.label,
                unit: 'req/s',
                baselineLabel: "the bare server's handler under a bare Koa app",
              },
              of(rates.route),
              of(rates.bareKoa),
            ),
            ratioRow(
              {
                id: `${receiver.id}_bare_koa_vs_bare_http`,
                label: 'bare Koa, call webhook store calls, HMAC and parse',
                unit: 'req/s',
                baselineLabel: 'the same handler on bare node:http',
              },
              of(rates.bareKoa),
              of(rates.bareHttp),
            ),
            ratioRow(
              {
                id: `${receiver.id}_bare_in_web_vs_bare_http`,
                label: 'bare handler in the web process, call webhook store calls, HMAC and parse',
                unit: 'req/s',
                baselineLabel: 'the same handler on bare node:http in a process of its own',
                note:
                  "The bare server's handler, unchanged, served from inside the web process (bench/bare-in-web.ts): " +
                  `the bound of ${receiver.id}_vs_bare_http, as for create-outbound-call. CPU per delivery there ` +
                  `${median(inWebCpu).toFixed(0)} µs, in the bare server ${median(bareCpu).toFixed(0)} µs (medians).`,
              },
              of(rates.inWeb),
              of(rates.bareHttp),
            ),
            ratioRow(
              {
                id: `${receiver.id}_vs_bare_in_web`,
                label: receiver.label,
                unit: 'req/s',
                baselineLabel: 'the bare handler in the same web process',
              },
              of(rates.route),
              of(rates.inWeb),
            ),
            ratioRow(
              {
                id: `${receiver.id}_duties_in_web_vs_bare_http`,
                label: "the route's duties without Koa, in the web process",
                unit: 'req/s',
                baselineLabel: 'bare node:http doing the same store calls, HMAC and parse',
                note:
                  "Everything the route does for a delivery, by the service's own functions in its order, on bare " +
                  'node:http in the web process (bench/lib/duties-handler.ts): the request id and latency histogram, ' +
                  'the authentication before the body, the body under its limits with the depth and NUL checks, the ' +
                  "schema, the route's handler (the outbox's gate), the route's headers. What no route doing them " +
                  `can beat. CPU per delivery there ${median(dutiesCpu).toFixed(0)} µs, in the bare server ` +
                  `${median(bareCpu).toFixed(0)} µs, the bare handler in the web ${median(inWebCpu).toFixed(0)} µs (medians).`,
              },
              of(rates.duties),
              of(rates.bareHttp),
            ),
            ratioRow(
              {
                id: `${receiver.id}_vs_duties_in_web`,
                label: receiver.label,
                unit: 'req/s',
                baselineLabel: "the route's duties without Koa, in the same web process",
                note: `What Koa, the router and the middleware chain add to the duties: CPU per delivery through the route ${median(webCpu).toFixed(0)} µs, the duties ${median(dutiesCpu).toFixed(0)} µs (medians).`,
              },
              of(rates.route),
              of(rates.duties),
            ),
          );
        }
      }
      return rows;
    } finally {
      await app.close();
    }
  },
};
