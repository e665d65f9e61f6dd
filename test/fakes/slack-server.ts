// A small stand-in for Slack incoming webhooks on 127.0.0.1: POST /services/<T>/<B>/<secret>
// with a JSON message, answered as Slack does (200 "ok"; 400 invalid_payload; 404 no_service;
// 429 with Retry-After; 500). Records every message it accepted and every attempt, and can be
// told to fail the next requests, or to hold its answers (a slow Slack: the request has
// arrived, the answer comes on release).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerDelay, type Latency } from './latency.js';

export interface SlackPost {
  path: string;
  body: any;
  status: number;
  at: number;
}

export interface SlackFailure {
  status: number;
  retryAfter?: string;
  /** Only requests to this webhook URL (default: any). */
  url?: string;
}

export interface FakeSlack {
  /** A webhook URL for this server; each call gives a new one (a new "channel"). */
  webhookUrl(): string;
  /** Every attempt, accepted or not. */
  attempts: SlackPost[];
  /** Messages accepted (answered 200), per webhook path. */
  messages(url?: string): SlackPost[];
  failNext: SlackFailure[];
  /**
   * Asked for each request no `failNext` entry took: a failure to answer it with, or undefined
   * to answer normally (the chaos run fails a share of requests this way).
   */
  injectFailure: (() => SlackFailure | undefined) | undefined;
  /** Holds the answers to requests arriving from now on (they are answered as usual on release). */
  hold(): void;
  release(): void;
  /** Requests that have arrived and wait for release(). */
  held(): number;
  close(): Promise<void>;
}

const SLACK_BODIES: Record<number, string> = {
  400: 'invalid_payload',
  403: 'action_prohibited',
  404: 'no_service',
  410: 'channel_is_archived',
  429: 'rate_limited',
  500: 'internal_error',
};

export async function startFakeSlack(options: { latency?: Latency } = {}): Promise<FakeSlack> {
  let counter = 0;
  const attempts: SlackPost[] = [];
  const failNext: SlackFailure[] = [];
  let base = '';
  const fake = { injectFailure: undefined as (() => SlackFailure | undefined) | undefined };
  let holding = false;
  const waiting: Array<() => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (holding) await new Promise<void>((resolve) => waiting.push(resolve));
      await answerDelay(options.latency);
      const path = req.url ?? '/';
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const reply = (status: number, headers: Record<string, string> = {}) => {
        attempts.push({ path, body, status, at: Date.now() });
        res.writeHead(status, { 'content-type': 'text/plain', ...headers });
        res.end(status === 200 ? 'ok' : (SLACK_BODIES[status] ?? 'error'));
      };
      if (req.method !== 'POST' || !/^\/services\/[^/]+\/[^/]+\/[^/]+$/.test(path)) return reply(404);
      const index = failNext.findIndex((f) => f.url === undefined || f.url === `${base}${path}`);
      const failure = index === -1 ? fake.injectFailure?.() : failNext.splice(index, 1)[0];
      if (failure !== undefined) {
        return reply(
          failure.status,
          failure.retryAfter === undefined ? {} : { 'retry-after': failure.retryAfter },
        );
      }
      if (body === undefined || (typeof body.text !== 'string' && !Array.isArray(body.blocks)))
        return reply(400);
      reply(200);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  return Object.assign(fake, {
    webhookUrl: () => `${base}/services/T0TEST/B0TEST${++counter}/secret${counter}`,
    attempts,
    messages: (url?: string) =>
      attempts.filter((a) => a.status === 200 && (url === undefined || `${base}${a.path}` === url)),
    failNext,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const answer of waiting.splice(0)) answer();
    },
    held: () => waiting.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const answer of waiting.splice(0)) answer();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
