// MongoDB unreachable: routes that need it answer 503 unavailable with Retry-After (never a
// 500 or a hang), readiness says which dependency is down, and routes that need no database
// keep answering.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/local/services.js';
import { expectError } from '../helpers/expect-error.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  // Nothing listens on this port: every MongoDB operation fails server selection.
  const port = await freePort();
  stack = await startStack({ env: { MONGODB_URI: `mongodb://127.0.0.1:${port}/down` }, noRelease: true });
});
afterAll(async () => stack?.stop());

describe('MongoDB outage', () => {
  it('answers 503 unavailable with Retry-After from a route that reads MongoDB', async () => {
    const res = await stack.admin.get('/api/firms/some-firm');
    expectError(res, 503, 'unavailable');
    expect(res.body.error.message).toContain('mongodb');
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('answers 503 for a firm API key, which needs MongoDB to be checked (not 401)', async () => {
    const res = await stack.api.withToken('isk_not-checkable-while-down').get('/api/v2/list-agents');
    expectError(res, 503, 'unavailable');
  });

  it('readiness is 503 naming mongodb; liveness stays 200', async () => {
    // Which store is down: for the platform key only (the public answer says only "not ready").
    const ready = await stack.admin.get('/readyz');
    expectError(ready, 503, 'unavailable');
    expect(ready.body.error.details).toEqual([
      { path: '/mongodb', message: expect.stringContaining('unreachable') },
    ]);
    expect((await stack.api.get('/healthz')).status).toBe(200);
  });
});
