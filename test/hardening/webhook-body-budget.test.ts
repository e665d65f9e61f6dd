// The large-body budget held by strangers: one anonymous, trickled, chunked request with a
// well-formed fake signature held the whole 32 MiB budget of the call webhook for 15 s, and a
// real 3 MB call_analyzed of another firm got 503 after 5 s (docs/webhooks.md#large-bodies).
// Now only a sender whose firm exists (with a key) and whose signature is fresh reads under the
// budget, and a body arriving slower than the minimum read rate is dropped; a delivery to a firm
// that does not exist (or has no key) takes no budget at all. Then trickled forgeries in one
// firm's name held that firm's whole share, and its own 3 MB call_analyzed got 503: now a signed
// delivery reads in its firm's share only once its sender's address has delivered a matching
// signature to that firm (Retell sends a call's small events first); until then it reads in the
// one pool that unproven deliveries share. Behind TRUST_PROXY each sender is an address of its own.
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
  stack = await startStack({ env: { TRUST_PROXY: 'true' } });
});

/** Retell's address, and two a forger sends from. */
const RETELL = '198.51.100.9';
const FORGERS = ['203.0.113.7', '203.0.113.8'];
afterAll(async () => stack?.stop());

interface Trickle {
  /** The answer the server gives the trickling sender. */
  answer: Promise<{ status: number; body: string }>;
  stop(): void;
}

/**
 * A delivery to `slug` with a well-formed, fresh x-retell-signature made with a key no one has,
 * whose body keeps arriving: chunked, or declaring `declared` bytes. `steady`: 16 KiB every 100 ms,
 * above the minimum read rate, so the delivery holds its room until the 15 s read limit; else a
 * byte every 100 ms.
 */
function trickle(
  slug: string,
  declared?: number,
  options: { from?: string; steady?: boolean } = {},
): Trickle {
  const { from = FORGERS[0]!, steady = true } = options;
  const piece = steady ? 'x'.repeat(16 * 1024) : 'x';
  const url = new URL(`/api/v2/${slug}/webhook`, stack.baseUrl);
  let timer: NodeJS.Timeout | undefined;
  let req: ClientRequest | undefined;
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req = request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'x-retell-signature': signRetellWebhook('{}', `whsec_${rand(8)}`),
        'X-Forwarded-For': from,
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
    timer = setInterval(() => req!.write(piece), 100);
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

/** A real two-hour call_analyzed (about 3 MB) to `slug`, signed with the firm's key, from Retell. */
async function realDelivery(slug: string) {
  const raw = JSON.stringify(longCallAnalyzed({ providerCallId: `call_${rand(8)}`, minutes: 120 }));
  expect(raw.length).toBeGreaterThan(2.8 * 1e6);
  return stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'x-retell-signature': signRetellWebhook(raw, SECRET),
      'X-Forwarded-For': RETELL,
    },
  });
}

/** A small signed event to `slug` (a call's call_started), from Retell by default: its address proves itself. */
async function provenBy(slug: string, from = RETELL, secret = SECRET) {
  const raw = JSON.stringify({
    event: 'call_started',
    call: longCallAnalyzed({ providerCallId: `call_${rand(8)}`, minutes: 1 }).call,
  });
  const res = await stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: {
      'Content-Type': 'application/json',
      'x-retell-signature': signRetellWebhook(raw, secret),
      'X-Forwarded-For': from,
    },
  });
  expect(res.status, res.text).toBe(200);
}

describe('the large-body budget of the call webhook', () => {
  it("trickled forgeries to one firm (chunked, and declaring 32 MiB) leave another firm's 3 MB call_analyzed served", async () => {
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    const other = await createFirm(stack, { voice_webhook_secret: SECRET });
    await provenBy(other.slug);
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
    await provenBy(other.slug);
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

  it("trickled forgeries in a firm's own name, from several addresses, leave that firm's 3 MB call_analyzed served", async () => {
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    await provenBy(target.slug);
    const held = FORGERS.flatMap((from) => [
      trickle(target.slug, undefined, { from }),
      trickle(target.slug, 32 * MiB, { from }),
    ]);
    try {
      await sleep(500);
      const res = await realDelivery(target.slug);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ received: true });
    } finally {
      for (const t of held) t.stop();
    }
  });

  it("an address proven to its own firm is unproven to another: its forgeries in that firm's name leave that firm's share", async () => {
    // The forger is a customer: its own firm's signed events prove its address, to that firm only.
    const own = await createFirm(stack, { voice_webhook_secret: 'whsec_forgers_own_secret' });
    await provenBy(own.slug, FORGERS[0], 'whsec_forgers_own_secret');
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    await provenBy(target.slug);
    const held = [
      trickle(target.slug, undefined, { from: FORGERS[0] }),
      trickle(target.slug, 32 * MiB, { from: FORGERS[0] }),
    ];
    try {
      await sleep(500);
      const res = await realDelivery(target.slug);
      expect(res.status, res.text).toBe(200);
    } finally {
      for (const t of held) t.stop();
    }
  });

  it('a body arriving slower than the minimum read rate is dropped (408), to a real firm or to none', async () => {
    const target = await createFirm(stack, { voice_webhook_secret: SECRET });
    for (const slug of [target.slug, `nobody-${rand(4)}`]) {
      const t = trickle(slug, undefined, { steady: false });
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
