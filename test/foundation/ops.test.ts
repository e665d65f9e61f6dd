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
