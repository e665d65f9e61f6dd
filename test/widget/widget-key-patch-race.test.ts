// Two PATCHes of one widget key at once, each changing its own field: neither undoes the other.
// The request that read the key before the other's write landed (here made to happen every time:
// the key read first, the other PATCH, then the write) must write only what it was asked to
// change, or a rename running beside the removal of an origin puts that origin back, and pages on
// it get widget tokens again although the removal was answered 200.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findWidgetKey, updateWidgetKey } from '../../core/domain/widget/widget-keys.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey } from './widget-key-helpers.js';

const OLD_SITE = 'https://old.firm.example';
const NEW_SITE = 'https://firm.example';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

it('a rename that read the key before an origin was removed does not put the origin back', async () => {
  const firm = await createFirm(stack);
  await createAgent(firm.client, firm.slug);
  const key = await createWidgetKey(firm.client, firm.slug, { allowed_origins: [OLD_SITE, NEW_SITE] });
  const db = stack.services.mongo.db;
  // The rename's request has read the key ...
  const read = await findWidgetKey(db, key.id);
  expect(read?.allowed_origins).toEqual([OLD_SITE, NEW_SITE]);
  // ... when the removal of the old site is made and answered.
  const removed = await firm.client.patch(`/api/widget-keys/${key.id}`, { allowed_origins: [NEW_SITE] });
  expect(removed.status, JSON.stringify(removed.body)).toBe(200);
  // Then the rename writes.
  const renamed = await updateWidgetKey(db, read!, { name: 'Main site' });
  expect(renamed.name).toBe('Main site');
  expect(renamed.allowed_origins).toEqual([NEW_SITE]);

  const now = await firm.client.get(`/api/widget-keys/${key.id}`);
  expect(now.body).toMatchObject({ name: 'Main site', allowed_origins: [NEW_SITE] });
  expectError(await askSession(stack.api, OLD_SITE, { key: key.key }), 403, 'origin_not_allowed');
  expect((await askSession(stack.api, NEW_SITE, { key: key.key })).status).toBe(200);
});
