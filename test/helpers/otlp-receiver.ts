import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A collector as small as a test needs: OTLP/HTTP with JSON bodies (what
// @opentelemetry/exporter-trace-otlp-http sends: POST /v1/traces, Content-Type
// application/json, hex trace and span ids), keeping each raw body and every span flattened.

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startNs: bigint;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string }[];
}
interface OtlpBody {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? v.boolValue ?? v.doubleValue ?? Number(v.intValue);

const attributesOf = (list: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

export interface OtlpReceiver {
  /** The value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  /** Every request body, as received. */
  bodies: string[];
  /** Content types the exporter sent. */
  contentTypes: string[];
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks).toString('utf8');
      bodies.push(raw);
      contentTypes.push(req.headers['content-type'] ?? '');
      try {
        const body = JSON.parse(raw) as OtlpBody;
        for (const resourceSpans of body.resourceSpans) {
          const service = String(attributesOf(resourceSpans.resource.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans) {
            for (const span of scope.spans) {
              spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
                name: span.name,
                kind: span.kind,
                startNs: BigInt(span.startTimeUnixNano),
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              });
            }
          }
        }
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bodies,
    contentTypes,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The chain of parents of a span, nearest first (within the spans received). */
export function ancestorsOf(span: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  for (let parent = span.parentSpanId; parent !== undefined;) {
    const next = byId.get(parent);
    if (next === undefined) break;
    chain.push(next);
    parent = next.parentSpanId;
  }
  return chain;
}

const KIND = ['', 'internal', 'server', 'client', 'producer', 'consumer'];

const dbSystem = (s: ReceivedSpan): string | undefined =>
  (s.attributes['db.system.name'] ?? s.attributes['db.system']) as string | undefined;

/**
 * One trace as an indented tree: span name, kind, process (service.name) and the attributes
 * named in `keys`. To stay readable, Koa's per-middleware spans are left out (their children
 * hang from the nearest span shown), and the database spans under a span are summed up in one
 * line (`mongodb ×5, redis ×7`).
 */
export function drawTrace(spans: ReceivedSpan[], keys: string[] = []): string {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const hidden = (s: ReceivedSpan): boolean => s.attributes['koa.type'] === 'middleware';
  const shownParent = (s: ReceivedSpan): string | undefined => {
    let parent = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
    while (parent !== undefined && hidden(parent))
      parent = parent.parentSpanId === undefined ? undefined : byId.get(parent.parentSpanId);
    return parent?.spanId;
  };
  const children = new Map<string | undefined, ReceivedSpan[]>();
  for (const span of spans) {
    if (hidden(span)) continue;
    const parent = shownParent(span);
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  for (const list of children.values()) list.sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
  const label = (s: ReceivedSpan): string => {
    const shown = keys.filter((k) => s.attributes[k] !== undefined).map((k) => `${k}=${s.attributes[k]}`);
    return `${s.name} [${KIND[s.kind] ?? s.kind}, ${s.service}]${shown.length > 0 ? ` ${shown.join(' ')}` : ''}`;
  };
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number): void => {
    const list = children.get(parent) ?? [];
    const leafDb = list.filter(
      (s) => dbSystem(s) !== undefined && (children.get(s.spanId) ?? []).length === 0,
    );
    const counts = new Map<string, number>();
    for (const s of leafDb) counts.set(dbSystem(s)!, (counts.get(dbSystem(s)!) ?? 0) + 1);
    if (counts.size > 0)
      lines.push(`${'  '.repeat(depth)}(${[...counts].map(([system, n]) => `${system} ×${n}`).join(', ')})`);
    for (const span of list) {
      if (leafDb.includes(span)) continue;
      lines.push(`${'  '.repeat(depth)}${label(span)}`);
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
