import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardRaw, readRawBody } from './forward.js';

// Sits between a webhook sender (the simulator) and the service: records each delivery as
// sent on the wire, forwards it, and can hold deliveries of chosen events until released, so
// a test can look at the call between two events without sleeping.

export interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: any;
  status?: number;
}

export interface WebhookProxy {
  url: string;
  deliveries: Delivery[];
  /** Where to forward (the service's base URL), set once the service is listening. */
  target: string;
  holdEvent(event: string): void;
  /** Answers the next `times` deliveries of `event` with 503 itself, without forwarding them. */
  failNext(event: string, times: number): void;
  release(event: string): void;
  /** Lets every held delivery go and holds nothing more: a test that failed midway leaves none held. */
  releaseAll(): void;
  close(): Promise<void>;
}

export async function startWebhookProxy(): Promise<WebhookProxy> {
  const holding = new Set<string>();
  const waiting = new Map<string, Array<() => void>>();
  const failures = new Map<string, number>();
  const proxy: WebhookProxy = {
    url: '',
    deliveries: [],
    target: '',
    holdEvent: (event) => void holding.add(event),
    failNext: (event, times) => void failures.set(event, times),
    release(event) {
      holding.delete(event);
      for (const go of waiting.get(event) ?? []) go();
      waiting.delete(event);
    },
    releaseAll() {
      for (const event of new Set([...holding, ...waiting.keys()])) proxy.release(event);
    },
    async close() {
      proxy.releaseAll();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = createServer((req, res) => {
    void (async () => {
      const rawBody = await readRawBody(req);
      let body: any;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const delivery: Delivery = { path: req.url ?? '/', headers: req.headers, rawBody, body };
      proxy.deliveries.push(delivery);
      const event = typeof body?.event === 'string' ? body.event : '';
      const failing = failures.get(event) ?? 0;
      if (failing > 0) {
        failures.set(event, failing - 1);
        delivery.status = 503;
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{"error":{"code":"unavailable","message":"injected by the test proxy"}}');
        return;
      }
      if (holding.has(event)) {
        await new Promise<void>((resolve) => waiting.set(event, [...(waiting.get(event) ?? []), resolve]));
      }
      const forwarded = await forwardRaw(req, rawBody, proxy.target);
      delivery.status = forwarded.status;
      res.writeHead(forwarded.status, { 'content-type': forwarded.contentType });
      res.end(forwarded.text);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
