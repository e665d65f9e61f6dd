// The call webhook with realistic bodies (the web process as a child, no workers): Retell
// call_analyzed deliveries of a long call (test/calls/long-call-fixture.ts, word-level
// transcript_object and all) of about 1.2 MB and 3 MB, each a new call, signed as Retell signs,
// 20 in flight. Per size and round:
//   - deliveries per second, and the web process's CPU per delivery (/proc/<pid>/stat);
//   - the baseline, in this process in the same round: what no receiver can skip for the same
//     bytes — decode them to text, JSON.parse it, HMAC-SHA256 them with the timestamp as Retell
//     signs — CPU per delivery (process.cpuUsage);
//   - the web's peak RSS (sampled every 10 ms) against its RSS before the round;
//   - the bare node:http server (bench/bare-http-server.ts, under the web's Procfile flags) doing
//     the same work for the same bodies, 20 in flight: its CPU per delivery. The web ÷ it is what
//     the service adds; it ÷ the parse is what Node's HTTP and a queue add cost beyond the parse
//     of bytes already in hand, with as many bodies in memory at once (their collection
//     included): the bound of `webhook_*_cpu_vs_parse`.
import { createHmac } from 'node:crypto';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { longCallAnalyzed } from '../../test/calls/long-call-fixture.js';
import { median, processCpuSeconds, RssSampler, say } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { createApp, makeTenant, rand } from '../lib/stack.js';
import { startBareHttp } from '../lib/bare-http.js';

const IN_FLIGHT = 20;
const PLACEHOLDER = 'bench_call_id_placeholder_0000000000';

interface Size {
  id: string;
  label: string;
  /** The call's length, chosen for the body's size. */
  minutes: number;
  /** Deliveries per round. */
  deliveries: number;
}

const SIZES: Size[] = [
  { id: '1mb', label: '1.2 MB', minutes: 50, deliveries: 120 },
  { id: '3mb', label: '3 MB', minutes: 125, deliveries: 60 },
];

/** The body of a new call each time: the template with a fresh provider call id. */
function bodyMaker(minutes: number): { next: () => string; bytes: number } {
  const template = JSON.stringify(longCallAnalyzed({ providerCallId: PLACEHOLDER, minutes }));
  let n = 0;
  return {
    next: () => template.replaceAll(PLACEHOLDER, `bench_${rand(8)}_${String(n++).padStart(8, '0')}`),
    bytes: Buffer.byteLength(template),
  };
}

/** CPU microseconds, in this process, of decoding, parsing and HMAC-ing each body (median). */
function parseAndHmacMicros(bodies: Buffer[], secret: string): number {
  const each: number[] = [];
  for (const raw of bodies) {
    const t = process.cpuUsage();
    const digest = createHmac('sha256', secret).update(raw).update(String(Date.now())).digest();
    const parsed = JSON.parse(raw.toString('utf8')) as { event?: string };
    const used = process.cpuUsage(t);
    if (parsed.event !== 'call_analyzed' || digest.length !== 32) throw new Error('baseline: bad body');
    each.push(used.user + used.system);
  }
  return median(each);
}

export const webhookBodies: Scenario = {
  name: 'webhook-bodies',
  ids: [
    'webhook_1mb_per_s',
    'webhook_1mb_cpu_vs_parse',
    'webhook_1mb_cpu_vs_bare_http',
    'webhook_1mb_bare_http_vs_parse',
    'webhook_1mb_rss_mb',
    'webhook_3mb_per_s',
    'webhook_3mb_cpu_vs_parse',
    'webhook_3mb_cpu_vs_bare_http',
    'webhook_3mb_bare_http_vs_parse',
    'webhook_3mb_rss_mb',
  ],
  async run(ctx) {
    const app = await createApp(ctx.stores, 'webhook-bodies');
    const rows: Row[] = [];
    try {
      const web = await app.startWeb();
      const secret = `whsec_${rand(12)}`;
      const tenant = await makeTenant(app, web.base, { voice_webhook_secret: secret });
      const url = `${web.base}/api/v2/${tenant.slug}/webhook`;
      const bare = await startBareHttp(app, { slug: tenant.slug, agentId: tenant.agentId, secret });
      /** Posts each delivery, IN_FLIGHT at a time; every one must be answered 200. */
      const deliver = async (to: string, deliveries: Array<{ raw: string; signature: string }>) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async () => {
            while (next < deliveries.length) {
              const { raw, signature } = deliveries[next++]!;
              const res = await fetch(to, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', 'x-retell-signature': signature },
                body: raw,
              });
              await res.arrayBuffer();
              if (res.status !== 200) throw new Error(`${to} answered ${res.status}`);
            }
          }),
        );
      };
      for (const size of SIZES) {
        const bodies = bodyMaker(size.minutes);
        // Bodies made (and signed) before the clock starts: the bench's own work is not timed.
        const batch = (n: number) =>
          Array.from({ length: n }, () => {
            const raw = bodies.next();
            return { raw, signature: signRetellWebhook(raw, secret) };
          });
        // Warm-up of both.
        await deliver(url, batch(10));
        await deliver(`${bare.base}/webhook`, batch(10));
        const rates: number[] = [];
        const webCpu: number[] = [];
        const baseCpu: number[] = [];
        const bareCpu: number[] = [];
        const peaks: number[] = [];
        const before: number[] = [];
        for (let round = 0; round < ctx.rounds; round++) {
          const deliveries = batch(size.deliveries);
          before.push(web.rss());
          const sampler = new RssSampler(web.pid, 10).start();
          const c0 = processCpuSeconds(web.pid);
          const t = performance.now();
          await deliver(url, deliveries);
          const seconds = (performance.now() - t) / 1000;
          const cpu = ((processCpuSeconds(web.pid) - c0) * 1e6) / deliveries.length;
          peaks.push(sampler.stop());
          const bareDeliveries = batch(size.deliveries);
          const b0 = processCpuSeconds(bare.pid);
          await deliver(`${bare.base}/webhook`, bareDeliveries);
          bareCpu.push(((processCpuSeconds(bare.pid) - b0) * 1e6) / bareDeliveries.length);
          rates.push(deliveries.length / seconds);
          webCpu.push(cpu);
          baseCpu.push(
            parseAndHmacMicros(
              deliveries.slice(0, 20).map((d) => Buffer.from(d.raw)),
              secret,
            ),
          );
          say(
            `webhook ${size.label} round ${round + 1}: ${rates[round]!.toFixed(1)} deliveries/s, web CPU ${cpu.toFixed(0)} µs each, ` +
              `parse + HMAC ${baseCpu[round]!.toFixed(0)} µs, bare node:http ${bareCpu[round]!.toFixed(0)} µs, web RSS ${before[round]!.toFixed(0)} → peak ${peaks[round]!.toFixed(0)} MiB`,
          );
        }
        const mb = (bodies.bytes / 1e6).toFixed(2);
        rows.push(
          ratioRow(
            {
              id: `webhook_${size.id}_per_s`,
              label: `call_analyzed of ${mb} MB, ${IN_FLIGHT} in flight`,
              unit: '/s',
              baselineLabel: 'parse + HMAC of the same bytes on one core, /s',
            },
            rates,
            baseCpu.map((us) => 1e6 / us),
          ),
          ratioRow(
            {
              id: `webhook_${size.id}_cpu_vs_parse`,
              label: `web CPU per ${mb} MB delivery`,
              unit: 'µs',
              baselineLabel: 'decode + JSON.parse + HMAC-SHA256 of the same bytes, µs',
              target: { op: '<=', limit: 2 },
            },
            webCpu,
            baseCpu,
          ),
          ratioRow(
            {
              id: `webhook_${size.id}_cpu_vs_bare_http`,
              label: `web CPU per ${mb} MB delivery`,
              unit: 'µs',
              baselineLabel: 'a bare node:http server doing the same work, µs',
            },
            webCpu,
            bareCpu,
          ),
          ratioRow(
            {
              id: `webhook_${size.id}_bare_http_vs_parse`,
              label: `bare node:http CPU per ${mb} MB delivery`,
              unit: 'µs',
              baselineLabel: 'decode + JSON.parse + HMAC-SHA256 of the same bytes, µs',
            },
            bareCpu,
            baseCpu,
          ),
          ratioRow(
            {
              id: `webhook_${size.id}_rss_mb`,
              label: `web RSS peak, ${mb} MB deliveries, ${IN_FLIGHT} in flight`,
              unit: 'MiB',
              baselineLabel: 'before the round',
            },
            peaks,
            before,
          ),
        );
      }
      return rows;
    } finally {
      await app.close();
    }
  },
};
