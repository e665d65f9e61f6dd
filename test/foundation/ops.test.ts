import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../jobs/queues.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

describe('operations endpoints need no token', () => {
  it('GET /healthz: 200 while the process is up', async () => {
    const res = await stack.api.get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('GET /readyz: 200 when Redis and MongoDB answer; each store named for the platform key only', async () => {
    const res = await stack.api.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready' });
    const detailed = await stack.admin.get('/readyz');
    expect(detailed.body).toEqual({ status: 'ready', redis: 'ok', mongodb: 'ok' });
  });

  it('GET /metrics: Prometheus text with HTTP latency and every queue', async () => {
    // One served request of a known route, so the latency histogram has a series for it.
    const firm = await createFirm(stack);
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).status).toBe(200);

    const res = await stack.api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const lines = res.text.split('\n');
    expect(lines).toContain('# TYPE http_request_duration_seconds histogram');
    expect(
      lines.some((l) =>
        /^http_request_duration_seconds_count\{method="GET",route="\/api\/firms\/:slug",status="200"\} [1-9]/.test(
          l,
        ),
      ),
    ).toBe(true);
    for (const queue of QUEUE_NAMES) {
      for (const state of ['waiting', 'active', 'delayed', 'failed', 'completed']) {
        expect(lines).toContain(`bullmq_queue_jobs{queue="${queue}",state="${state}"} 0`);
      }
      for (const outcome of ['completed', 'failed']) {
        expect(
          lines.some((l) =>
            l.startsWith(`bullmq_jobs_finished_total{queue="${queue}",outcome="${outcome}"} `),
          ),
        ).toBe(true);
      }
    }
  });

  it('GET /metrics parses as Prometheus text: each family once with HELP and TYPE, counts that only grow typed counter', async () => {
    const firm = await createFirm(stack);
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).status).toBe(200);
    const text = (await stack.api.get('/metrics')).text;
    const families = new Map<string, { type?: string; help?: string; samples: string[] }>();
    let current: string | null = null;
    const family = (name: string) => families.get(name) ?? families.set(name, { samples: [] }).get(name)!;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
      if (meta !== null) {
        const f = family(meta[2]!);
        const key = meta[1] === 'HELP' ? 'help' : 'type';
        expect(f[key], `${meta[1]} ${meta[2]} given twice`).toBeUndefined();
        f[key] = meta[3]!;
        current = meta[2]!;
        continue;
      }
      // name{label="value",...} value, label values with only \\, \" and \n escapes.
      const sample =
        /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$/.exec(
          line,
        );
      expect(sample, line).not.toBeNull();
      expect(Number.isNaN(Number(sample![3])) && sample![3] !== 'NaN', line).toBe(false);
      const name = sample![1]!;
      const base = name.replace(/_(bucket|sum|count)$/, '');
      const owner = families.get(name)?.type !== undefined ? name : base;
      expect(owner, `${line} outside its family's block`).toBe(current);
      family(owner).samples.push(line);
    }
    for (const [name, f] of families) {
      expect(f.type, name).toMatch(/^(counter|gauge|histogram|summary|untyped)$/);
      expect(f.help, name).toBeDefined();
      // A _total name is a counter's (promtool: "non-counter metrics should not have _total
      // suffix"); prom-client's own nodejs_active_*_total gauges are not the service's to rename.
      if (name.endsWith('_total') && !name.startsWith('nodejs_')) expect(f.type, name).toBe('counter');
    }
    expect(families.get('bullmq_jobs_finished_total')?.type).toBe('counter');
    expect(families.get('webhook_delivery_attempts_total')?.type).toBe('counter');
    // Histograms: le rising to +Inf, cumulative counts, +Inf equal to _count.
    const labelsOf = (line: string) => /\{(.*)\}/.exec(line)?.[1] ?? '';
    const withoutLe = (labels: string) => labels.replace(/(^|,)le="[^"]*"/, '').replace(/^,/, '');
    const series = new Map<string, Array<[number, number]>>();
    const counts = new Map<string, number>();
    for (const line of families.get('http_request_duration_seconds')!.samples) {
      const value = Number(line.split(' ').at(-1));
      if (line.startsWith('http_request_duration_seconds_count{')) counts.set(labelsOf(line), value);
      if (!line.startsWith('http_request_duration_seconds_bucket{')) continue;
      const le = /(?:^|,)le="([^"]+)"/.exec(labelsOf(line))![1]!;
      const key = withoutLe(labelsOf(line));
      const rows = series.get(key) ?? series.set(key, []).get(key)!;
      rows.push([le === '+Inf' ? Infinity : Number(le), value]);
    }
    expect(series.size).toBeGreaterThan(0);
    for (const [labels, rows] of series) {
      for (let i = 1; i < rows.length; i++) {
        expect(rows[i]![0]).toBeGreaterThan(rows[i - 1]![0]);
        expect(rows[i]![1]).toBeGreaterThanOrEqual(rows[i - 1]![1]);
      }
      expect(rows.at(-1)![0]).toBe(Infinity);
      expect(counts.get(labels), labels).toBe(rows.at(-1)![1]);
    }
  });

  it('GET /metrics: event-loop delay is a number at every scrape, even scrapes too close for a new sample', async () => {
    // The delay is sampled every 10 ms and each scrape starts a new window: scrapes at once
    // leave a window with no sample, whose mean and deviation are not numbers and whose least
    // delay is the histogram's empty-value sentinel (2^63 ns), unless the last window is kept.
    const names = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'].map(
      (part) => `nodejs_eventloop_lag_${part}_seconds`,
    );
    for (let round = 0; round < 3; round++) {
      const texts = await Promise.all(
        Array.from({ length: 6 }, async () => (await stack.api.get('/metrics')).text),
      );
      for (const text of texts) {
        const values = new Map<string, number>();
        for (const line of text.split('\n')) {
          const [name, value] = line.split(' ');
          if (names.includes(name!)) values.set(name!, Number(value));
        }
        expect([...values.keys()].sort()).toEqual([...names].sort());
        for (const [name, value] of values) {
          expect(Number.isFinite(value) && value >= 0 && value < 60, `${name} ${value}`).toBe(true);
        }
        expect(values.get('nodejs_eventloop_lag_min_seconds')!).toBeLessThanOrEqual(
          values.get('nodejs_eventloop_lag_max_seconds')!,
        );
      }
    }
  });

  it('queue depth in /metrics follows the queue', async () => {
    const queue = stack.services.queues[QUEUE_NAMES[0]!];
    await queue.add('metrics-probe', {}, { delay: 60 * 60 * 1000, jobId: 'metrics-probe' });
    try {
      const res = await stack.api.get('/metrics');
      expect(res.text.split('\n')).toContain(`bullmq_queue_jobs{queue="${queue.name}",state="delayed"} 1`);
    } finally {
      await queue.remove('metrics-probe');
    }
  });

  it('ignore an Authorization header, even a bad one', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']) {
      expect((await stack.api.withToken('garbage').get(path)).status, path).toBe(200);
    }
  });
});
