// What the RingCentral tests share: connecting a firm as its staff's browser would, and the
// services of workers started in the test's own process (so a test can stop and start them).
import { expect } from 'vitest';
import { createLogger } from '../../core/platform/logger.js';
import { createServices, type Services } from '../../core/wiring/services.js';
import type { Stack } from '../helpers/stack.js';
import { FlowBrowser } from './clio-oauth-browser.js';

/** Services for workers started in this process (startWorkers), on the stack's Redis and database. */
export const workerServices = (stack: Stack): Services =>
  createServices(stack.config, createLogger(stack.config.logLevel, 'test'), 'worker');

/** Connects the firm's RingCentral as its staff's browser would: connect → RingCentral's authorize → our callback. */
export async function connectRingCentral(stack: Stack, firm: { slug: string; key: string }) {
  const browser = new FlowBrowser().at(new URL(stack.baseUrl).origin);
  const res = await fetch(`${stack.baseUrl}/api/integrations/ringcentral/connect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${firm.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ firmSlug: firm.slug }),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie()[0]!.split(';')[0]!;
  const { authorize_url: authorize } = (await res.json()) as { authorize_url: string };
  const approved = await browser.request(authorize);
  expect(approved.status).toBe(302);
  const back = await browser.request(approved.headers.get('location')!, { headers: { cookie } });
  return { authorize, back, html: await back.text(), cookie, callback: approved.headers.get('location')! };
}
