// A key with challenge "altcha" and the per-address session limit: the widget asks for a session
// first without a solution (to learn whether the key wants one), then with a solved challenge.
// That first ask is no session: it must not use up the address's sessions of the hour, or a
// visitor on an ALTCHA site gets half of WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { clearOfPeriodEdge } from '../helpers/window-edge.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey, solvedNumber } from './widget-key-helpers.js';

const SITE = 'https://firm.example';
const SESSIONS_PER_HOUR = 3;

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: { WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR: String(SESSIONS_PER_HOUR) } });
});
afterAll(async () => stack?.stop());

/** A solved challenge of the key, as the widget sends it. */
async function solution(key: string): Promise<string> {
  const res = await stack.api.get(`/api/widget/challenge?key=${encodeURIComponent(key)}`, { Origin: SITE });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const { algorithm, challenge, salt, signature } = res.body;
  const number = solvedNumber(res.body);
  expect(number).not.toBeNull();
  return Buffer.from(JSON.stringify({ algorithm, challenge, number, salt, signature, took: 1 })).toString(
    'base64',
  );
}

it(`an ALTCHA key's address opens ${SESSIONS_PER_HOUR} sessions an hour, as the widget asks for them`, async () => {
  await clearOfPeriodEdge(3_600_000);
  const firm = await createFirm(stack);
  await createAgent(firm.client, firm.slug);
  const key = await createWidgetKey(firm.client, firm.slug, { challenge: 'altcha' });
  for (let i = 0; i < SESSIONS_PER_HOUR; i++) {
    // The widget's first ask: no solution yet.
    expectError(await askSession(stack.api, SITE, { key: key.key }), 400, 'altcha_required');
    const opened = await askSession(stack.api, SITE, { key: key.key, altcha: await solution(key.key) });
    expect(opened.status, `session ${i + 1}: ${JSON.stringify(opened.body)}`).toBe(200);
  }
  // The limit still holds: the next session of the hour is refused, with or without a solution.
  const refused = await askSession(stack.api, SITE, { key: key.key, altcha: await solution(key.key) });
  expectError(refused, 429, 'rate_limited');
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
});
