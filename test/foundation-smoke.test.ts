import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from './helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

describe('smoke', () => {
  it('is ready and creates a firm', async () => {
    expect((await stack.api.get('/readyz')).status).toBe(200);
    const firm = await createFirm(stack);
    const read = await firm.client.get(`/api/firms/${firm.slug}`);
    expect(read.status).toBe(200);
    expect(read.body.slug).toBe(firm.slug);
  });
});
