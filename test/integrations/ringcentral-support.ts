// What the RingCentral tests share: a stack on the fake RingCentral, and connecting a firm as its
// staff's browser would.
import { expect } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import type { FakeRingCentral } from '../fakes/ringcentral-server.js';
import { FlowBrowser } from './clio-oauth-browser.js';

/** A stack whose RingCentral app is the spec-checked fake `rc`; `env` adds to it. */
export const startRingCentralStack = (
  rc: FakeRingCentral,
  env: Record<string, string> = {},
): Promise<Stack> =>
  startStack({
    env: {
      RINGCENTRAL_CLIENT_ID: rc.oauth.clientId,
      RINGCENTRAL_CLIENT_SECRET: rc.oauth.clientSecret,
      RINGCENTRAL_SERVER: rc.url,
      ...env,
    },
  });

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
