import { SpanKind } from '@opentelemetry/api';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { maskPersonal, scrubAttributes, type Attributes } from './scrub.js';

type SpanExporter = NodeSDKConfiguration['traceExporter'];
type ReadableSpan = Parameters<SpanExporter['export']>[0][number];

/** Every span through ./scrub.ts on its way to the collector (loaded only with tracing on). */
export class ScrubbingExporter implements SpanExporter {
  constructor(private readonly next: SpanExporter) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.next.export(spans.map(scrubSpan), done);
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush?.() ?? Promise.resolve();
  }
}

function scrubSpan(span: ReadableSpan): ReadableSpan {
  const outgoing = span.kind === SpanKind.CLIENT;
  // The span object stays the prototype (spanContext() and the rest read through it).
  return Object.create(span, {
    name: { value: maskPersonal(span.name) },
    attributes: { value: scrubAttributes(span.attributes as Attributes, outgoing) },
    events: {
      value: span.events.map((event) => ({
        ...event,
        ...(event.attributes === undefined
          ? {}
          : { attributes: scrubAttributes(event.attributes as Attributes, outgoing) }),
      })),
    },
  }) as ReadableSpan;
}
