// Each widget token was once its own rate-limit principal, so with the firm's widget
// at 429 a freshly minted token still got 200s. Widget tokens count as their firm: one bucket for
// all of a firm's widget tokens (docs/authentication.md#rate-limits), apart from its API keys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintWidgetToken } from '../../core/domain/access/widget-token.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

const LIMIT = 5;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });
});
afterAll(async () => {
  await stack?.stop();
});

describe('widget tokens are rate-limited as their firm', () => {
  it('once one widget token of a firm is at 429, a freshly minted one is refused too; another firm’s and the firm’s API key are not', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const widget = async (slug: string) =>
      stack.api.withToken((await mintWidgetToken(slug, stack.config.sessionSecret)).token);
    // A chat no one has: 404 once the token is let in, 429 when it is not.
    const path = '/api/v2/get-chat/abc123';
    const first = await widget(firm.slug);
    for (let i = 0; i < LIMIT; i++) expectError(await first.get(path), 404, 'chat_not_found');
    expectError(await first.get(path), 429, 'rate_limited');
    const fresh = await widget(firm.slug);
    const refused = await fresh.get(path);
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expectError(await (await widget(other.slug)).get(path), 404, 'chat_not_found');
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).status).toBe(200);
  });
});
