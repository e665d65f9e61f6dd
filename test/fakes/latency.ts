import { setTimeout as sleep } from 'node:timers/promises';

// How long a fake provider takes to answer, for benches where the outside world's latency is
// what the workers wait on (bench/scenarios/scale-effects.ts): each answer waits a uniformly
// random time in [minMs, maxMs]. Tests leave it unset: the fakes answer at once.

export interface Latency {
  minMs: number;
  maxMs: number;
}

/** Waits one answer's latency (nothing without one). */
export function answerDelay(latency: Latency | undefined): Promise<void> {
  if (latency === undefined) return Promise.resolve();
  return sleep(latency.minMs + Math.random() * Math.max(0, latency.maxMs - latency.minMs));
}
