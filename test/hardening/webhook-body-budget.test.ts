// The large-body budget held by strangers: one anonymous, trickled, chunked request with a
// well-formed fake signature held the whole 32 MiB budget of the call webhook for 15 s, and a
// real 3 MB call_analyzed of another firm got 503 after 5 s (docs/webhooks.md#large-bodies).
// Now only a sender whose firm exists (with a key) and whose signature is fresh reads under the
// budget, each firm within its share, and a body arriving slower than the minimum read rate is
// dropped; a delivery to a firm that does not exist (or has no key) takes no budget at all.
import { request, type ClientRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { longCallAnalyzed } from '../calls/long-call-fixture.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

const SECRET = 'whsec_body_budget_secret';
const MiB = 1024 * 1024;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

interface Trickle {
  /** The answer the server gives the trickling sender. */
  answer: Promise<{ status: number; body: string }>;
  stop(): void;
}

/**
 * A delivery to `slug` with a well-formed, fresh x-retell-signature made with a key no one has,
 * whose body arrives a few bytes at a time: chunked, or declaring `declared` bytes.
 */
function trickle(slug: string, declared?: number): Trickle {
  const url = new URL(`/api/v2/${slug}/webhook`, stack.baseUrl);
  let timer: NodeJS.Timeout | undefined;
  let req: ClientRequest | undefined;
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req = request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'x-retell-signature': signRetellWebhook('{}', `whsec_${rand(8)}`),
        ...(declared === undefined
          ? { 'Transfer-Encoding': 'chunked' }
          : { 'Content-Length': String(declared) }),
      },
    });
    req.on('response', (res) => {
      clearInterval(timer);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    req.write('{"event":"call_analyzed","call":{"call_id":"');
    timer = setInterval(() => req!.write('x'), 100);
  });
  answer.catch(() => {}); // a sender stopped by the test: its socket's end is not a failure
  return {
    answer,
    stop: () => {
      clearInterval(timer);
      req?.destroy();
    },
  };
}

/** A real two-hour call_analyzed (about 3 MB) to `slug`, signed with the firm's key. */
async function realDelivery(slug: string) {
  const raw = JSON.stringify(longCallAnalyzed({ providerCallId: `call_${rand(8)}`, minutes: 120 }));
  expect(raw.length).toBeGreaterThan(2.8 * 1e6);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': signRetellWebhook(raw, SECRET) },
  });
}

describe('the large-body budget of the call webhook', () => {
  it("trickled forgeries to one firm (chunked, and declaring 32 MiB) leave another firm's 3 MB call_analyzed served", async () => {
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    const other = await createFirm(stack, { voice_webhook_secret: SECRET });
    const held = [trickle(target.slug), trickle(target.slug, 32 * MiB)];
    try {
      await sleep(500); // the trickles are in and reading
      const res = await realDelivery(other.slug);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ received: true });
    } finally {
      for (const t of held) t.stop();
    }
  });

  it('deliveries to firms that do not exist take none of the budget; forgeries to a firm without its own secret hold only its share', async () => {
    // Without a voice_webhook_secret a firm still has a key (the simulator's, derived for it), so
    // its forgeries are held to its share like any firm's.
    const keyless = await createFirm(stack);
    const other = await createFirm(stack, { voice_webhook_secret: SECRET });
    const held = [
      trickle(`nobody-${rand(4)}`),
      trickle(`nobody-${rand(4)}`, 32 * MiB),
      trickle(keyless.slug),
      trickle(keyless.slug, 32 * MiB),
    ];
    try {
      await sleep(500);
      const res = await realDelivery(other.slug);
      expect(res.status, res.text).toBe(200);
    } finally {
      for (const t of held) t.stop();
    }
  });

  it('a body arriving slower than the minimum read rate is dropped (408), to a real firm or to none', async () => {
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    for (const slug of [target.slug, `nobody-${rand(4)}`]) {
      const t = trickle(slug);
      try {
        const { status, body } = await t.answer;
        expect(status).toBe(408);
        expect(JSON.parse(body).error).toEqual({
          code: 'request_timeout',
          message: expect.stringContaining('too slowly'),
        });
      } finally {
        t.stop();
      }
    }
  });
});
