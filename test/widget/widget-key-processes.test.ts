// A widget key changed through one web process takes effect on the very next session request to
// another (the read cache's change epoch: core/platform/db/read-cache.ts), though the session
// route takes no token and so makes no rate-limit round trip.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';

let stack: Stack;
let second: Awaited<ReturnType<typeof startWebProcess>>;
beforeAll(async () => {
  stack = await startStack();
  second = await startWebProcess(stack.env);
});
afterAll(async () => {
  await second?.stop();
  await stack?.stop();
});

const SITE = 'https://firm.example';

describe('widget keys across two web processes', () => {
  it('a deleted key is refused on the next session request to the other process, its tokens too', async () => {
    const firm = await createFirm(stack);
    await createAgent(firm.client, firm.slug);
    const key = await createWidgetKey(firm.client, firm.slug);
    const onSecond = new ApiClient(second.baseUrl);
    // Warm: the other process has the key cached, under the epoch a token request there saw.
    for (let i = 0; i < 3; i++) {
      expect((await onSecond.withToken(firm.key).get(`/api/firms/${firm.slug}`)).status).toBe(200);
      expect((await askSession(onSecond, SITE, { key: key.key })).status).toBe(200);
    }
    const session = await askSession(onSecond, SITE, { key: key.key });
    const visitor = onSecond.withToken(session.body.token);
    const getChat = () => visitor.get('/api/v2/get-chat/chat_none', { Origin: SITE });
    expectError(await getChat(), 404, 'chat_not_found');
    expect((await firm.client.delete(`/api/widget-keys/${key.id}`)).status).toBe(200);
    expectError(await askSession(onSecond, SITE, { key: key.key }), 401, 'unauthorized');
    // The tokens it issued end with it, there too.
    expectError(await getChat(), 401, 'unauthorized');
  });

  it('a patched allowed_origins applies on the next session request to the other process', async () => {
    const firm = await createFirm(stack);
    await createAgent(firm.client, firm.slug);
    const key = await createWidgetKey(firm.client, firm.slug);
    const onSecond = new ApiClient(second.baseUrl);
    expect((await onSecond.withToken(firm.key).get(`/api/firms/${firm.slug}`)).status).toBe(200);
    expect((await askSession(onSecond, SITE, { key: key.key })).status).toBe(200);
    expectError(
      await askSession(onSecond, 'https://new.example', { key: key.key }),
      403,
      'origin_not_allowed',
    );
    await firm.client.patch(`/api/widget-keys/${key.id}`, { allowed_origins: ['https://new.example'] });
    expectError(await askSession(onSecond, SITE, { key: key.key }), 403, 'origin_not_allowed');
    expect((await askSession(onSecond, 'https://new.example', { key: key.key })).status).toBe(200);
  });
});
