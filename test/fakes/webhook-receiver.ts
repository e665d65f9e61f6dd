// A firm's webhook receiver on 127.0.0.1: records every request (path, headers, raw body, arrival
// order) and answers each as `answer` says (default 200 "ok"), possibly after a delay. Paths
// stand for different endpoints of one server.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ReceivedDelivery {
  /** Arrival order over the whole server. */
  seq: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The status it was answered with. */
  status: number;
}

export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer only once this settles (a stall the test ends). */
  until?: Promise<unknown>;
}

export interface WebhookReceiver {
  url(path: string): string;
  received: ReceivedDelivery[];
  /** Requests to `path`. */
  at(path: string): ReceivedDelivery[];
  /** Those answered 2xx. */
  accepted(path: string): ReceivedDelivery[];
  answer: (path: string, request: { headers: Record<string, string>; body: string }) => Answer;
  close(): Promise<void>;
}

const flat = (headers: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).flatMap(([k, v]) =>
      v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]],
    ),
  );

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let seq = 0;
  const receiver: WebhookReceiver = {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    received: [],
    at: (path) => receiver.received.filter((r) => r.path === path),
    accepted: (path) => receiver.at(path).filter((r) => r.status >= 200 && r.status < 300),
    answer: () => ({ status: 200, body: 'ok' }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { headers: flat(req.headers), body: Buffer.concat(chunks).toString('utf8') };
      const path = req.url ?? '/';
      const answer = receiver.answer(path, request);
      void (async () => {
        if (answer.delayMs) await sleep(answer.delayMs);
        if (answer.until) await answer.until.catch(() => undefined);
        // Recorded when answered: arrival order is the order the answers were decided and sent.
        receiver.received.push({ seq: ++seq, path, ...request, status: answer.status });
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      })();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return receiver;
}
