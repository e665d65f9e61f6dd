import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Db } from 'mongodb';
import type { Queues } from '../jobs/queues.js';
import { countKeptDeliveries } from '../core/domain/deliveries/delivery-outbox.js';
import { clioClientAlert } from '../core/domain/crm/clio-client-alert.js';
import { ringCentralClientAlert } from '../core/domain/phone/ringcentral-connection.js';
import { openAiSpendToday } from '../core/domain/intake/openai-budget.js';
import type { Services } from '../core/wiring/services.js';
import { deliveryOutcomes } from '../core/domain/events/deliveries.js';
import { registerEventLoopDelay } from './event-loop-delay.js';

export interface HttpMetrics {
  /** What `/metrics` shows anyone (the contract: no token). */
  registry: Registry;
  /**
   * Series labelled by firm, shown to the platform only: to anyone they would list the firms'
   * slugs, which the service otherwise never lets an outsider enumerate
   * (docs/webhooks.md#authentication-before-the-body), with how busy each firm is.
   */
  firmRegistry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
}

/**
 * One registry per app: HTTP latency observed here, queue depth and job outcomes read from
 * Redis at scrape time (outcomes are counted by the workers through BullMQ's metrics).
 */
export function createMetrics(
  queues: Queues,
  db: Db,
  spend: Pick<Services, 'redis' | 'config'>,
): HttpMetrics {
  const registry = new Registry();
  const firmRegistry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerEventLoopDelay(registry);
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'bullmq_queue_jobs',
    help: 'Jobs in each queue by state',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      await Promise.all(
        Object.values(queues).map(async (queue) => {
          const counts = await queue.getJobCounts(
            'waiting',
            'active',
            'delayed',
            'failed',
            'completed',
            'prioritized',
          );
          for (const [state, n] of Object.entries(counts)) this.set({ queue: queue.name, state }, n);
        }),
      );
    },
  });
  // Counts that only grow (reset when their store is emptied): counters, as their `_total` names
  // say, so `rate()` and `promtool check metrics` take them. Read whole at each scrape.
  new Counter({
    name: 'bullmq_jobs_finished_total',
    help: 'Jobs finished by each queue since metrics began, by outcome (completed, failed)',
    labelNames: ['queue', 'outcome'] as const,
    registers: [registry],
    async collect() {
      const counts = await Promise.all(
        Object.values(queues).flatMap((queue) =>
          (['completed', 'failed'] as const).map(async (outcome) => {
            const metrics = await queue.getMetrics(outcome, 0, 0);
            return { labels: { queue: queue.name, outcome }, n: metrics.meta.count };
          }),
        ),
      );
      // Reset and filled with no await between: two scrapes at once cannot add up their reads.
      this.reset();
      for (const { labels, n } of counts) this.inc(labels, n);
    },
  });
  new Gauge({
    name: 'webhook_outbox_deliveries',
    help: 'Webhook deliveries kept in MongoDB while Redis was down, not yet moved to their queues',
    registers: [registry],
    async collect() {
      // MongoDB down: no figure rather than a failed scrape.
      await countKeptDeliveries(db).then(
        (n) => this.set(n),
        () => this.reset(),
      );
    },
  });
  new Counter({
    name: 'webhook_delivery_attempts_total',
    help: "Attempts to deliver events to firms' webhook endpoints since the counters began, by outcome: delivered, retrying (failed, a retry follows), failed (retries spent), gone (410: endpoint disabled), skipped (endpoint disabled or deleted)",
    labelNames: ['outcome'] as const,
    registers: [registry],
    async collect() {
      // Redis down: no figures rather than a failed scrape.
      const counts = await deliveryOutcomes(spend).catch(() => null);
      this.reset();
      if (counts === null) return;
      for (const outcome of ['delivered', 'retrying', 'failed', 'gone', 'skipped']) {
        this.inc({ outcome }, counts[outcome] ?? 0);
      }
    },
  });
  new Gauge({
    name: 'clio_oauth_client_refused',
    help: "1 while Clio refuses the service's own OAuth client credentials (invalid_client) and no grant has succeeded since; 0 otherwise",
    registers: [registry],
    async collect() {
      await clioClientAlert(db).then(
        (alert) => this.set(alert === null ? 0 : 1),
        () => this.reset(),
      );
    },
  });
  new Gauge({
    name: 'ringcentral_oauth_client_refused',
    help: "1 while RingCentral refuses the service's own OAuth client credentials (invalid_client) and no grant has succeeded since; 0 otherwise",
    registers: [registry],
    async collect() {
      await ringCentralClientAlert(db).then(
        (alert) => this.set(alert === null ? 0 : 1),
        () => this.reset(),
      );
    },
  });
  // Each firm's OpenAI spend today (docs/extract.md#budget), read from the day's hashes at scrape.
  const perFirmToday = (name: string, help: string, what: 'chars' | 'refused') =>
    new Gauge({
      name,
      help,
      labelNames: ['firm'] as const,
      registers: [firmRegistry],
      async collect() {
        this.reset();
        // Redis down: no figures rather than a failed scrape.
        const today = await openAiSpendToday(spend).catch(() => null);
        if (today === null) return;
        // Every firm that spent or was refused today, on both gauges.
        for (const firm of new Set([...Object.keys(today.chars), ...Object.keys(today.refused)])) {
          this.set({ firm }, Number(today[what][firm] ?? 0));
        }
      },
    });
  perFirmToday(
    'openai_chars_today',
    "Characters each firm's extractions sent to OpenAI today (UTC), within its daily budget",
    'chars',
  );
  perFirmToday(
    'openai_budget_fallbacks_today',
    'Extractions of each firm answered by the deterministic extractor today (UTC) because its OpenAI budget was spent',
    'refused',
  );
  return { registry, firmRegistry, httpDuration };
}
