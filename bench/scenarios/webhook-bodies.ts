// The call webhook with realistic bodies (the web process as a child, no workers): Retell
// call_analyzed deliveries of a long call (test/calls/long-call-fixture.ts, word-level
// transcript_object and all) of about 1.2 MB and 3 MB, each a new call, signed as Retell signs,
// 20 in flight. Per size and round:
//   - deliveries per second, and the web process's CPU per delivery (/proc/<pid>/stat);
//   - the baseline, in this process in the same round: what no receiver can skip for the same
//     bytes — decode them to text, JSON.parse it, HMAC-SHA256 them with the timestamp as Retell
//     signs — CPU per delivery (process.cpuUsage);
//   - the web's peak RSS (sampled every 10 ms) against its RSS before the round.
import { createHmac } from 'node:crypto';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { longCallAnalyzed } from '../../test/calls/long-call-fixture.js';
import { median, processCpuSeconds, RssSampler, say } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { createApp, makeTenant, rand } from '../lib/stack.js';

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
    'webhook_1mb_rss_mb',
    'webhook_3mb_per_s',
    'webhook_3mb_cpu_vs_parse',
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
      const post = async (raw: string): Promise<void> => {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'x-retell-signature': signRetellWebhook(raw, secret),
          },
          body: raw,
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
      };
      for (const size of SIZES) {
        const bodies = bodyMaker(size.minutes);
        // Bodies made (and signed) before the clock starts: the bench's own work is not timed.
        const batch = (n: number) =>
          Array.from({ length: n }, () => {
            const raw = bodies.next();
            return { raw, signature: signRetellWebhook(raw, secret) };
          });
        for (const { raw } of batch(10)) await post(raw); // warm-up
        const rates: number[] = [];
        const webCpu: number[] = [];
        const baseCpu: number[] = [];
        const peaks: number[] = [];
        const before: number[] = [];
        for (let round = 0; round < ctx.rounds; round++) {
          const deliveries = batch(size.deliveries);
          before.push(web.rss());
          const sampler = new RssSampler(web.pid, 10).start();
          const c0 = processCpuSeconds(web.pid);
          const t = performance.now();
          let next = 0;
          await Promise.all(
            Array.from({ length: IN_FLIGHT }, async () => {
              while (next < deliveries.length) {
                const { raw, signature } = deliveries[next++]!;
                const res = await fetch(url, {
                  method: 'POST',
                  headers: { 'Content-Type': 'application/json', 'x-retell-signature': signature },
                  body: raw,
                });
                await res.arrayBuffer();
                if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
              }
            }),
          );
          const seconds = (performance.now() - t) / 1000;
          const cpu = ((processCpuSeconds(web.pid) - c0) * 1e6) / deliveries.length;
          peaks.push(sampler.stop());
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
              `parse + HMAC ${baseCpu[round]!.toFixed(0)} µs, web RSS ${before[round]!.toFixed(0)} → peak ${peaks[round]!.toFixed(0)} MiB`,
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
