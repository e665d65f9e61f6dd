// A small stand-in for Slack incoming webhooks on 127.0.0.1: POST /services/<T>/<B>/<secret>
// with a JSON message, answered as Slack does (200 "ok"; 404 no_service; 429 with Retry-After;
// 500), and refusing with a 400 and Slack's plain-text word what Slack refuses: a body that is
// not a JSON object (invalid_payload), a message with neither text nor blocks (no_text), blocks
// that are not an array (invalid_blocks_format), and blocks off Block Kit's published limits
// (invalid_blocks; docs.slack.dev/reference/block-kit: at most 50 blocks; a header's plain_text
// at most 150 characters; a section's text at most 3000, its fields at most 10 of at most 2000
// each; a context's 1 to 10 elements; a text object plain_text or mrkdwn, 1 to 3000 characters,
// `emoji` only on plain_text). Records every message it accepted and every attempt, and can be
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

/** What Slack finds wrong with a message's blocks (Block Kit's limits), or null. */
function blockProblem(blocks: unknown[]): string | null {
  if (blocks.length > 50) return `${blocks.length} blocks (at most 50)`;
  const textObject = (t: unknown, where: string, max: number, only?: 'plain_text'): string | null => {
    if (typeof t !== 'object' || t === null) return `${where} is not a text object`;
    const { type, text, emoji } = t as Record<string, unknown>;
    if (type !== 'plain_text' && type !== 'mrkdwn') return `${where}.type is ${String(type)}`;
    if (only !== undefined && type !== only) return `${where} must be ${only}`;
    if (typeof text !== 'string' || text.length === 0) return `${where}.text is empty`;
    if (text.length > max) return `${where}.text has ${text.length} characters (at most ${max})`;
    if (emoji !== undefined && type !== 'plain_text') return `${where}.emoji is only for plain_text`;
    return null;
  };
  for (const [i, block] of blocks.entries()) {
    const at = `blocks[${i}]`;
    if (typeof block !== 'object' || block === null) return `${at} is not an object`;
    const b = block as Record<string, unknown>;
    if (typeof b.block_id === 'string' && b.block_id.length > 255) return `${at}.block_id is too long`;
    let problem: string | null = null;
    switch (b.type) {
      case 'header':
        problem = textObject(b.text, `${at}.text`, 150, 'plain_text');
        break;
      case 'section': {
        if (b.text === undefined && b.fields === undefined) return `${at} has neither text nor fields`;
        if (b.text !== undefined) problem = textObject(b.text, `${at}.text`, 3000);
        if (problem === null && b.fields !== undefined) {
          if (!Array.isArray(b.fields) || b.fields.length === 0 || b.fields.length > 10)
            return `${at}.fields must hold 1 to 10 text objects`;
          for (const [j, field] of b.fields.entries()) {
            problem ??= textObject(field, `${at}.fields[${j}]`, 2000);
          }
        }
        break;
      }
      case 'context': {
        if (!Array.isArray(b.elements) || b.elements.length === 0 || b.elements.length > 10)
          return `${at}.elements must hold 1 to 10 elements`;
        for (const [j, element] of b.elements.entries()) {
          if ((element as { type?: unknown } | null)?.type === 'image') continue;
          problem ??= textObject(element, `${at}.elements[${j}]`, 3000);
        }
        break;
      }
      case 'divider':
      case 'actions':
      case 'image':
      case 'rich_text':
      case 'file':
      case 'input':
      case 'video':
        break;
      default:
        return `${at}.type is ${String(b.type)}`;
    }
    if (problem !== null) return problem;
  }
  return null;
}

/** Slack's plain-text word for a message it refuses, or null when it takes it. */
function messageRefusal(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'invalid_payload';
  const message = body as Record<string, unknown>;
  const hasText = typeof message.text === 'string' && message.text !== '';
  if (message.blocks !== undefined) {
    if (!Array.isArray(message.blocks)) return 'invalid_blocks_format';
    if (blockProblem(message.blocks) !== null) return 'invalid_blocks';
    if (message.blocks.length > 0) return null;
  }
  return hasText || Array.isArray(message.attachments) ? null : 'no_text';
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
      const reply = (status: number, headers: Record<string, string> = {}, word?: string) => {
        attempts.push({ path, body, status, at: Date.now() });
        res.writeHead(status, { 'content-type': 'text/plain', ...headers });
        res.end(status === 200 ? 'ok' : (word ?? SLACK_BODIES[status] ?? 'error'));
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
      const refusal = messageRefusal(body);
      if (refusal !== null) return reply(400, {}, refusal);
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
