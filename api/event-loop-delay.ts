import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

const PARTS = {
  min: 'The least event loop delay',
  max: 'The greatest event loop delay',
  mean: 'The mean event loop delay',
  stddev: 'The standard deviation of the event loop delays',
  p50: 'The 50th percentile of the event loop delays',
  p90: 'The 90th percentile of the event loop delays',
  p99: 'The 99th percentile of the event loop delays',
} as const;
type Part = keyof typeof PARTS;

/** The names prom-client's default metrics give the same figures, replaced here. */
const EVENT_LOOP_DELAY_METRICS = Object.keys(PARTS).map((part) => `nodejs_eventloop_lag_${part}_seconds`);

type Figures = Record<Part, number>;

/**
 * The process's one event loop, sampled by one histogram however many registries show it (a test
 * process runs many apps): the window since the last read, or the last window that had a sample.
 */
let sampler: (() => Figures) | undefined;

function eventLoopSampler(): () => Figures {
  if (sampler !== undefined) return sampler;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let last: Figures = { min: 0, max: 0, mean: 0, stddev: 0, p50: 0, p90: 0, p99: 0 };
  sampler = () => {
    if (histogram.count > 0) {
      last = {
        min: histogram.min / 1e9,
        max: histogram.max / 1e9,
        mean: histogram.mean / 1e9,
        stddev: histogram.stddev / 1e9,
        p50: histogram.percentile(50) / 1e9,
        p90: histogram.percentile(90) / 1e9,
        p99: histogram.percentile(99) / 1e9,
      };
      histogram.reset();
    }
    return last;
  };
  return sampler;
}

/**
 * Event-loop delay over the window since the previous scrape, in seconds, under prom-client's
 * names. prom-client reads and resets its histogram at every scrape whether or not a sample came
 * in between: two scrapes closer than the 10 ms sampling interval then show a mean and deviation
 * of NaN (printed "Nan", which the text format does not spell) and a least delay of the empty
 * histogram's sentinel, 2^63 ns (292 years). Here a window with no sample keeps the figures of
 * the last window that had one, and before any sample every figure is 0.
 */
export function registerEventLoopDelay(registry: Registry): void {
  for (const name of EVENT_LOOP_DELAY_METRICS) registry.removeSingleMetric(name);
  const read = eventLoopSampler();
  // Each gauge reads at its own collect: the first of a scrape takes the window and resets it,
  // the rest find it empty and show the same figures.
  for (const part of Object.keys(PARTS) as Part[]) {
    new Gauge({
      name: `nodejs_eventloop_lag_${part}_seconds`,
      help: `${PARTS[part]} since the previous scrape, in seconds (the last figure when no delay was sampled since)`,
      registers: [registry],
      collect() {
        this.set(read()[part]);
      },
    });
  }
}
