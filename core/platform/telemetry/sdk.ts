import { createRequire, register, syncBuiltinESMExports } from 'node:module';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { context, propagation, trace, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { BullMQOtel } from 'bullmq-otel';
import type { Telemetry } from 'bullmq';
import type { SpanSubject } from './start.js';
import { ScrubbingExporter } from './scrubbing-exporter.js';

// Loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set (./start.ts). The service is ESM, so the
// instrumentations reach the modules they patch through import-in-the-middle's loader hook,
// registered here for those modules only, before the process imports any of them.

export interface Tracing {
  bullmq: Telemetry;
  traceFields(): { trace_id?: string; span_id?: string };
  annotate(subject: SpanSubject): void;
  span<T>(name: string, subject: SpanSubject, fn: () => Promise<T>): Promise<T>;
  fetch: typeof fetch;
  shutdown(): Promise<void>;
}

/** Runs `fn` in `span`, which records a failure and ends when `fn` settles. */
async function within<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** Health probes and metrics scrapes come every few seconds and would drown the traces. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export async function startSdk(options: { endpoint: string; serviceName: string }): Promise<Tracing> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);

  const configuration: Partial<NodeSDKConfiguration> = {
    serviceName: options.serviceName,
    traceExporter: new ScrubbingExporter(new OTLPTraceExporter({ url: `${options.endpoint}/v1/traces` })),
    // Traces only: the SDK would otherwise start OTLP log and metric exporters from defaults.
    logRecordProcessors: [],
    metricReaders: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?', 1)[0] ?? ''),
      }),
      new KoaInstrumentation(),
      // Statements are recorded with their values replaced by `?` (no enhanced reporting).
      new MongoDBInstrumentation({ enhancedDatabaseReporting: false }),
      // The command name only: BullMQ's scripts carry job payloads (phones, names) as arguments
      // and job ids as keys.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
    ],
  };
  const sdk = new NodeSDK(configuration);
  sdk.start();
  await waitForAllMessagesAcknowledged();
  // node:http and node:https are patched in place on their CommonJS exports, when first
  // required (a CommonJS package such as mongodb or koa does so before any ESM import of them).
  // An ESM `import { request } from 'node:http'` reads a copy of those exports: patch now, then
  // copy the patched functions over, so every importer's `request` makes client spans.
  const require = createRequire(import.meta.url);
  require('node:http');
  require('node:https');
  syncBuiltinESMExports();

  const tracer = trace.getTracer('intake');
  const annotate = (subject: SpanSubject): void => {
    const span = trace.getActiveSpan();
    if (subject.firm !== undefined) span?.setAttribute('intake.firm', subject.firm);
    if (subject.callId !== undefined) span?.setAttribute('intake.call_id', subject.callId);
    if (subject.campaignId !== undefined) span?.setAttribute('intake.campaign_id', subject.campaignId);
  };
  return {
    bullmq: new BullMQOtel({ tracerName: 'intake' }),
    traceFields() {
      const span = trace.getActiveSpan();
      if (span === undefined) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    annotate,
    span(name, subject, fn) {
      return tracer.startActiveSpan(name, { kind: SpanKind.INTERNAL }, (span) => {
        annotate(subject);
        return within(span, fn);
      });
    },
    fetch: (input, init) => {
      const request = new Request(input, init);
      const url = new URL(request.url);
      return tracer.startActiveSpan(
        request.method,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'http.request.method': request.method,
            'url.full': request.url,
            'server.address': url.hostname,
          },
        },
        (span) => {
          propagation.inject(context.active(), request.headers, {
            set: (headers, key, value) => headers.set(key, value),
          });
          return within(span, async () => {
            const response = await fetch(request);
            span.setAttribute('http.response.status_code', response.status);
            if (response.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
            return response;
          });
        },
      );
    },
    shutdown: () => sdk.shutdown(),
  };
}
