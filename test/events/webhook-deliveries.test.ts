// Events out (docs/events.md): a do-not-call addition over the API records `dnc.added` events,
// and the worker delivers them to the firm's endpoints as the Standard Webhooks spec says,
// checked with the `standardwebhooks` library's own verifier. Retries on a schedule (seconds
// here), a manual retry, disabling, 410, secret rotation with both secrets valid for 24 h,
// replay with the original ids in order, the ping, the delivery log and the metrics.
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { signedRequest } from '../../core/domain/events/deliveries.js';
import { eventIdOf } from '../../core/domain/events/record-event.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;
let firm: Awaited<ReturnType<typeof createFirm>>;
let n = 0;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startStack({
    workers: true,
    env: { WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,300ms', WEBHOOK_ORDER_WAIT_MS: '60000' },
  });
  firm = await createFirm(stack);
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});
afterEach(() => clock.reset());

/** A new number each call (a US number of the 212 area). */
const phone = () => `+1212555${String(1000 + ++n).padStart(4, '0')}`;

async function endpoint(
  path: string,
  events: string[] = ['dnc.added'],
  client = firm.client,
  slug = firm.slug,
) {
  const res = await client.post('/api/webhook-endpoints', {
    firmSlug: slug,
    url: receiver.url(path),
    events,
  });
  expect(res.status).toBe(200);
  return res.body as { id: string; secret: string };
}

async function listNumbers(...phones: string[]) {
  const res = await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones });
  expect(res.status).toBe(200);
}

const deliveries = async (id: string) => {
  const res = await firm.client.get(`/api/webhook-endpoints/${id}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return res.body.deliveries as Array<Record<string, any>>;
};

describe('signed deliveries', () => {
  it('a receiver verifying with standardwebhooks accepts every delivery; a tampered body or an old timestamp is refused', async () => {
    const ep = await endpoint('/verify');
    const numbers = [phone(), phone(), phone()];
    await listNumbers(...numbers);
    const got = await eventually(async () => {
      const accepted = receiver.accepted('/verify');
      expect(accepted).toHaveLength(3);
      return accepted;
    });
    const wh = new Webhook(ep.secret);
    for (const r of got) {
      const payload = wh.verify(r.body, r.headers) as { type: string; timestamp: string; data: any };
      expect(Object.keys(payload)).toEqual(['type', 'timestamp', 'data']);
      expect(payload.type).toBe('dnc.added');
      expect(payload.data).toMatchObject({ firm: firm.slug, source: 'api' });
      expect(payload.timestamp).toBe(payload.data.added_at);
      // webhook-id is the event's id: derived from the change, the same on every attempt.
      expect(r.headers['webhook-id']).toMatch(/^evt_[a-z2-7]{26}$/);
      // Tampered body: refused.
      expect(() => wh.verify(r.body.replace('dnc.added', 'dnc.added '), r.headers)).toThrow();
      // Signed by the service's own signer, but 6 minutes ago: refused as too old.
      const old = signedRequest(
        [ep.secret],
        r.headers['webhook-id']!,
        payload.type,
        new Date(payload.timestamp),
        JSON.stringify(payload.data),
        new Date(Date.now() - 6 * 60_000),
      );
      expect(() => wh.verify(old.body, old.headers)).toThrow(/too old/i);
    }
    expect(new Set(got.map((r) => JSON.parse(r.body).data.phone))).toEqual(new Set(numbers));
    // The log: one delivered attempt each, with its status, duration and answer.
    const log = await deliveries(ep.id);
    expect(log).toHaveLength(3);
    for (const d of log) {
      expect(d).toMatchObject({ status: 'delivered', kind: 'event', type: 'dnc.added', out_of_order: false });
      expect(d.attempts).toHaveLength(1);
      expect(d.attempts[0]).toMatchObject({ status_code: 200, response_body: 'ok', error: null });
    }
    // Listing the same numbers again records no new event: nothing more is delivered.
    await listNumbers(...numbers);
    await listNumbers(phone());
    await eventually(async () => expect(receiver.accepted('/verify')).toHaveLength(4));
  });
});
