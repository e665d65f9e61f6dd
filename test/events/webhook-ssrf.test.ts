// The URL policy on webhook endpoints (core/platform/url-policy.ts): without ALLOW_PRIVATE_URLS an
// endpoint at a metadata or loopback address is refused when it is created or changed, and a
// delivery to a host that resolves to a private address — an endpoint stored while private URLs
// were allowed, as if its name had been re-pointed since (DNS rebinding) — fails before anything
// is sent, and the attempt is recorded.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWeb, type Web } from '../../api/web.js';
import { createServices, type Services } from '../../core/wiring/services.js';
import { startWorkers, type Workers } from '../../workers/runner.js';
import { processors } from '../../workers/processors/index.js';
import { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.js';

let stack: Stack;
let receiver: WebhookReceiver;
let strictServices: Services;
let strictWeb: Web;
let strictWorkers: Workers;
let firm: Awaited<ReturnType<typeof createFirm>>;
let strict: ApiClient;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // The stack's own web process allows private URLs (the endpoint below is stored through it);
  // a second web process and the only workers over the same database and queues do not.
  stack = await startStack({ env: { WEBHOOK_RETRY_SCHEDULE: '1d' } });
  const config = { ...stack.config, allowPrivateUrls: false, port: 0 };
  strictServices = createServices(config, stack.services.log, 'producer');
  strictWeb = await startWeb(strictServices, '127.0.0.1');
  strictWorkers = startWorkers(createServices(config, stack.services.log, 'worker'), processors);
  firm = await createFirm(stack);
  strict = new ApiClient(`http://127.0.0.1:${strictWeb.port}`, firm.key);
});
afterAll(async () => {
  await strictWorkers?.stop();
  await strictWeb?.stop();
  await strictServices?.close();
  await stack?.stop();
  await receiver?.close();
});

it('refuses metadata and loopback addresses when an endpoint is created or changed', async () => {
  const refused = [
    'http://169.254.169.254/',
    'http://127.0.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://[::1]/hook',
    'https://2130706433/hook',
  ];
  for (const url of refused) {
    const details = expectError(
      await strict.post('/api/webhook-endpoints', { firmSlug: firm.slug, url, events: ['*'] }),
      400,
      'url_not_allowed',
    );
    expect(details.map((d) => d.path)).toEqual(['/url']);
  }
  const ok = await strict.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url: 'https://hooks.example.com/intake',
    events: ['*'],
  });
  expect(ok.status).toBe(200);
  expectError(
    await strict.patch(`/api/webhook-endpoints/${ok.body.id}`, { url: 'http://169.254.169.254/' }),
    400,
    'url_not_allowed',
  );
  await strict.delete(`/api/webhook-endpoints/${ok.body.id}`);
});

it('a delivery to a host resolving to 127.0.0.1 fails at delivery time: recorded, not sent', async () => {
  const url = receiver.url('/rebound').replace('127.0.0.1', 'localhost');
  const created = await firm.client.post('/api/webhook-endpoints', {
    firmSlug: firm.slug,
    url,
    events: ['dnc.added'],
  });
  expect(created.status).toBe(200);
  expect(
    (await firm.client.post('/api/compliance/dnc', { firmSlug: firm.slug, phones: ['+12125550199'] })).status,
  ).toBe(200);
  const [delivery] = await eventually(async () => {
    const res = await firm.client.get(`/api/webhook-endpoints/${created.body.id}/deliveries`);
    expect(res.body.deliveries[0]?.attempts).toHaveLength(1);
    return res.body.deliveries;
  });
  expect(delivery.attempts[0]).toMatchObject({ status_code: null, response_body: null });
  expect(delivery.attempts[0].error).toMatch(/^url_not_allowed: .*\(not sent\)$/);
  expect(delivery.status).toBe('pending');
  expect(delivery.next_attempt_at).not.toBeNull();
  expect(receiver.received).toEqual([]);
});
