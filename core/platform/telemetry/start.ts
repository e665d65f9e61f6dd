import type { Telemetry } from 'bullmq';
import type { Config } from '../config.js';
import type { Tracing } from './sdk.js';

// Traces are optional (OTEL_EXPORTER_OTLP_ENDPOINT). Unset, nothing of OpenTelemetry is loaded
// and every function here returns at once. Set, startTracing loads the SDK (./sdk.ts), which
// must patch http, Koa, MongoDB and ioredis as they load: an entry calls it before importing
// anything else (api/server.ts, workers/main.ts).

let active: Tracing | undefined;

export async function startTracing(
  config: Pick<Config, 'otelExporterOtlpEndpoint' | 'otelServiceName'>,
  serviceName: 'intake-web' | 'intake-worker',
): Promise<void> {
  if (config.otelExporterOtlpEndpoint === undefined || active !== undefined) return;
  const { startSdk } = await import('./sdk.js');
  active = await startSdk({
    endpoint: config.otelExporterOtlpEndpoint,
    serviceName: config.otelServiceName ?? serviceName,
  });
}

/** Sends the spans still buffered (a stopping process calls it last). */
export async function stopTracing(): Promise<void> {
  await active?.shutdown();
}

export const tracingActive = (): boolean => active !== undefined;

/** BullMQ's telemetry option for a Queue or Worker: the job carries the trace from add to process. */
export function queueTelemetry(): { telemetry?: Telemetry } {
  return active === undefined ? {} : { telemetry: active.bullmq };
}

/** The active span's ids, for log lines (pino's mixin); empty outside a span. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  return active?.traceFields() ?? {};
}

/** What names a piece of work in a span, from a job payload or a request: never a phone or a secret. */
export interface SpanSubject {
  firm?: string;
  callId?: string;
  campaignId?: string;
}

/** Puts the firm, call and campaign on the active span. */
export function annotateSpan(subject: SpanSubject): void {
  active?.annotate(subject);
}

/** Runs `fn` in a span of its own (named, with the firm and call on it); just `fn` when tracing is off. */
export function inSpan<T>(name: string, subject: SpanSubject, fn: () => Promise<T>): Promise<T> {
  return active === undefined ? fn() : active.span(name, subject, fn);
}

/**
 * `fetch` as a traced HTTP client call (a client span, the trace passed on in `traceparent`),
 * for code calling out with fetch (the Retell SDK): Node's fetch is
 * not node:http, which the HTTP instrumentation patches. Plain fetch when tracing is off.
 */
export const tracedFetch: typeof fetch = (input, init) =>
  active === undefined ? fetch(input, init) : active.fetch(input, init);
