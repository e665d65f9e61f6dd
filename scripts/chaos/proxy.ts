// Sits between the voice simulator and the web process (PUBLIC_BASE_URL points here): forwards
// every webhook delivery unchanged, records what was sent and what the service answered, and
// tells the run about each one (the run then delivers every call_analyzed a second time).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardRaw, readRawBody } from '../../test/fakes/forward.js';

export interface ProxiedDelivery {
  at: number;
  /** The firm slug of the path /api/v2/{firm}/webhook. */
  firm: string;
  event: string;
  /** The provider's call id (the simulator's). */
  providerCallId: string;
  /** Our call id, from the call's metadata. */
  callId: string;
  status: number;
}

export interface ChaosProxy {
  url: string;
  /** The web process's base URL. */
  target: string;
  deliveries: ProxiedDelivery[];
  /** Told of each delivery with its raw body (not kept: thousands of transcripts). */
  onDelivery: Array<(delivery: ProxiedDelivery, rawBody: string) => void>;
  close(): Promise<void>;
}

export async function startChaosProxy(): Promise<ChaosProxy> {
  const proxy: ChaosProxy = {
    url: '',
    target: '',
    deliveries: [],
    onDelivery: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = createServer((req, res) => {
    void (async () => {
      const rawBody = await readRawBody(req);
      let status = 502;
      let text = '';
      let contentType = 'application/json';
      try {
        ({ status, contentType, text } = await forwardRaw(req, rawBody, proxy.target));
      } catch (err) {
        text = JSON.stringify({ error: { code: 'bad_gateway', message: (err as Error).message } });
      }
      let body:
        { event?: unknown; call?: { call_id?: unknown; metadata?: { call_id?: unknown } } } | undefined;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const delivery: ProxiedDelivery = {
        at: Date.now(),
        firm: /^\/api\/v2\/([^/]+)\/webhook/.exec(req.url ?? '')?.[1] ?? '',
        event: typeof body?.event === 'string' ? body.event : '',
        providerCallId: String(body?.call?.call_id ?? ''),
        callId: String(body?.call?.metadata?.call_id ?? ''),
        status,
      };
      proxy.deliveries.push(delivery);
      for (const listener of proxy.onDelivery) listener(delivery, rawBody);
      res.writeHead(status, { 'content-type': contentType });
      res.end(text);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
