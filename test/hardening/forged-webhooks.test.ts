// Forged webhook deliveries: forged signatures used up a firm's webhook rate limit (ten forged
// deliveries from one address made the firm's next correctly signed one a 429), and a
// well-formed signature to an unknown firm answered 404 (uncounted: slugs could be enumerated,
// and a firm without a secret told apart from one with another). Now only verified deliveries
// count against the firm; a forged one is a 401 counted against the sender's address, and an
// unknown firm or a firm without a secret is answered exactly as a wrong signature is.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import { signRetellWebhook } from '../../core/integrations/voice/webhook-signature.js';
import { CAL_NO_SECRET, calPing } from '../fakes/calcom-fixtures.js';
import { expectError } from '../helpers/expect-error.js';
import { ApiClient } from '../helpers/client.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';

const SECRET = 'whsec_forged_webhooks_secret';
const hex64 = (): string => randomBytes(32).toString('hex');

/** The two receivers: their path, a body that changes nothing, how they are signed, the firm setting. */
const RECEIVERS = [
  {
    name: 'call webhook',
    path: (slug: string) => `/api/v2/${slug}/webhook`,
    body: () => JSON.stringify({ event: 'transcript_updated', call: { call_id: `c_${rand()}` } }),
    header: 'x-retell-signature',
    sign: (raw: string, secret: string) => signRetellWebhook(raw, secret),
    forge: () => `v=${Date.now()},d=${hex64()}`,
    setting: 'voice_webhook_secret',
  },
  {
    name: 'booking webhook',
    path: (slug: string) => `/api/v2/${slug}/booking-webhook`,
    body: () => JSON.stringify({ triggerEvent: 'MEETING_ENDED', payload: { uid: `b_${rand()}` } }),
    header: 'X-Cal-Signature-256',
    sign: (raw: string, secret: string) => signCalWebhook(raw, secret),
    forge: () => hex64(),
    setting: 'booking_webhook_secret',
  },
] as const;
type Receiver = (typeof RECEIVERS)[number];

const stacks: Stack[] = [];
afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
});
async function stackWith(env: Record<string, string>): Promise<Stack> {
  const stack = await startStack({ env });
  stacks.push(stack);
  return stack;
}

function post(stack: Stack | ApiClient, receiver: Receiver, slug: string, raw: string, signature: string) {
  return ('api' in stack ? stack.api : stack).request('POST', receiver.path(slug), {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', [receiver.header]: signature },
  });
}
const signed = (stack: Stack | ApiClient, r: Receiver, slug: string, secret = SECRET) => {
  const raw = r.body();
  return post(stack, r, slug, raw, r.sign(raw, secret));
};
const forged = (stack: Stack, r: Receiver, slug: string) => post(stack, r, slug, r.body(), r.forge());

describe('forged signatures do not use up a firm’s webhook rate limit', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await stackWith({
      WEBHOOK_RATE_LIMIT_PER_MINUTE: '10',
      UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '30',
    });
  });

  it('twelve forged deliveries to each receiver are 401s; the firm’s next signed one is 200; the forgeries count against the address', async () => {
    let unauthenticated = 0;
    for (const receiver of RECEIVERS) {
      const firm = await createFirm(stack, { [receiver.setting]: SECRET });
      for (let i = 0; i < 12; i++) {
        expectError(await forged(stack, receiver, firm.slug), 401, 'unauthorized');
        unauthenticated++;
      }
      expect((await signed(stack, receiver, firm.slug)).status, receiver.name).toBe(200);
    }
    // Cal.com's PING is let in unsigned: it does not count against the firm either, but against
    // the address, like a 401.
    const bookings = RECEIVERS[1];
    const firm = await createFirm(stack, { booking_webhook_secret: SECRET });
    for (let i = 0; i < 3; i++) {
      expect((await post(stack, bookings, firm.slug, JSON.stringify(calPing()), CAL_NO_SECRET)).status).toBe(
        200,
      );
      unauthenticated++;
    }
    for (let i = 0; i < 9; i++) expect((await signed(stack, bookings, firm.slug)).status).toBe(200);
    expect(unauthenticated).toBe(27);
    for (let i = 0; i < 3; i++) expectError(await forged(stack, bookings, firm.slug), 401, 'unauthorized');
    const refused = await forged(stack, bookings, firm.slug);
    expectError(refused, 429, 'rate_limited');
    expect(refused.body.error.message).toContain('without valid credentials from this address');
  });

  it('verified deliveries still count against the firm: the eleventh in a minute is 429, for each receiver', async () => {
    const limited = await stackWith({ WEBHOOK_RATE_LIMIT_PER_MINUTE: '10' });
    for (const receiver of RECEIVERS) {
      const firm = await createFirm(limited, { [receiver.setting]: SECRET });
      for (let i = 0; i < 10; i++) expect((await signed(limited, receiver, firm.slug)).status).toBe(200);
      const refused = await signed(limited, receiver, firm.slug);
      expectError(refused, 429, 'rate_limited');
      expect(refused.body.error.message).toContain("firm's webhooks");
      // A firm over its limit is refused before the body is read, even with a forged signature.
      expectError(await forged(limited, receiver, firm.slug), 429, 'rate_limited');
    }
  });
});

describe('deliveries are counted after the body, and a changed firm is still read afresh', () => {
  it('a rotated secret is refused on the very next delivery to another web process, on each receiver', async () => {
    const stack = await stackWith({});
    const second = await startWebProcess(stack.env);
    try {
      const onSecond = new ApiClient(second.baseUrl);
      for (const receiver of RECEIVERS) {
        const firm = await createFirm(stack, { [receiver.setting]: SECRET });
        for (let i = 0; i < 3; i++) expect((await signed(onSecond, receiver, firm.slug)).status).toBe(200);
        const rotated = `${SECRET}_rotated`;
        const patched = await stack.admin.patch(`/api/firms/${firm.slug}`, {
          settings: { [receiver.setting]: rotated },
        });
        expect(patched.status).toBe(200);
        expectError(await signed(onSecond, receiver, firm.slug), 401, 'unauthorized');
        expect((await signed(onSecond, receiver, firm.slug, rotated)).status).toBe(200);
      }
    } finally {
      await second.stop();
    }
  });
});

describe('an unknown firm, or one without a secret, is answered as a wrong signature is', () => {
  it('same status, body and headers for a wrong secret, an unknown slug and a firm without a secret, on each receiver', async () => {
    const stack = await stackWith({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000' });
    for (const receiver of RECEIVERS) {
      const withSecret = await createFirm(stack, { [receiver.setting]: SECRET });
      const withoutSecret = await createFirm(stack);
      const answers = [
        await signed(stack, receiver, withSecret.slug, 'whsec_someone_elses'),
        await signed(stack, receiver, `no-such-firm-${rand(3)}`),
        await signed(stack, receiver, withoutSecret.slug),
      ];
      for (const res of answers) expectError(res, 401, 'unauthorized');
      const seen = answers.map((res) => ({
        status: res.status,
        text: res.text,
        authenticate: res.headers.get('www-authenticate'),
      }));
      expect(seen[1], `${receiver.name}: unknown slug`).toEqual(seen[0]);
      expect(seen[2], `${receiver.name}: no secret`).toEqual(seen[0]);
      expect(seen[0]!.text).not.toMatch(/booking_webhook_secret|voice_webhook_secret|slug/);
    }
    // Cal.com's PING to an unknown firm is answered as to a known one.
    const ping = JSON.stringify(calPing());
    const known = await createFirm(stack);
    const toKnown = await post(stack, RECEIVERS[1], known.slug, ping, CAL_NO_SECRET);
    const toUnknown = await post(stack, RECEIVERS[1], `no-such-firm-${rand(3)}`, ping, CAL_NO_SECRET);
    expect([toKnown.status, toKnown.body]).toEqual([200, { received: true }]);
    expect([toUnknown.status, toUnknown.body]).toEqual([200, { received: true }]);
  });

  it('signed deliveries to unknown slugs are counted by the 401 limiter (then 429)', async () => {
    const stack = await stackWith({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '6' });
    for (let i = 0; i < 6; i++) {
      const receiver = RECEIVERS[i % 2]!;
      expectError(await signed(stack, receiver, `no-such-firm-${rand(3)}`), 401, 'unauthorized');
    }
    expectError(await signed(stack, RECEIVERS[0], `no-such-firm-${rand(3)}`), 429, 'rate_limited');
  });
});
