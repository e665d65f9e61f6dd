import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
});
afterAll(async () => stack?.stop());

const apiKeys = () => stack.services.mongo.db.collection('api_keys');

describe('firm API keys', () => {
  it('are shown once, in the create response', async () => {
    const res = await stack.admin.post('/api/auth/api-keys', { firmSlug: firm.slug, name: 'Reception desk' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^isk_[A-Za-z0-9_-]{40,}$/),
      key_prefix: res.body.key.slice(0, 10),
      firmSlug: firm.slug,
      name: 'Reception desk',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // The key works for its firm.
    expect((await stack.api.withToken(res.body.key).get(`/api/firms/${firm.slug}`)).status).toBe(200);

    const list = await stack.admin.get(`/api/auth/api-keys?firmSlug=${firm.slug}`);
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(res.body.key);
    const listed = list.body.find((k: { id: string }) => k.id === res.body.id);
    expect(listed).toEqual({
      id: res.body.id,
      firmSlug: firm.slug,
      name: 'Reception desk',
      key_prefix: res.body.key_prefix,
      created_at: res.body.created_at,
    });
    for (const entry of list.body) {
      expect(Object.keys(entry).sort()).toEqual(['created_at', 'firmSlug', 'id', 'key_prefix', 'name']);
    }
  });

  it('are stored only as a SHA-256 hash', async () => {
    const res = await stack.admin.post('/api/auth/api-keys', { firmSlug: firm.slug, name: 'Hashed' });
    const key = res.body.key as string;
    const doc = await apiKeys().findOne({ _id: res.body.id });
    expect(doc).not.toBeNull();
    expect(doc!.key_hash).toBe(createHash('sha256').update(key).digest('hex'));
    // No field, at any depth, holds the key or more than its short display prefix.
    const stored = JSON.stringify(doc);
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(10));
    expect(await apiKeys().countDocuments({ $or: [{ key }, { key_hash: key }] })).toBe(0);
  });

  it('list only the firm asked for', async () => {
    const other = await createFirm(stack);
    const list = await stack.admin.get(`/api/auth/api-keys?firmSlug=${other.slug}`);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0].firmSlug).toBe(other.slug);
  });

  it('revoking deletes the stored hash', async () => {
    const res = await stack.admin.post('/api/auth/api-keys', { firmSlug: firm.slug, name: 'Short-lived' });
    expect((await stack.admin.delete(`/api/auth/api-keys/${res.body.id}`)).status).toBe(200);
    expect(await apiKeys().countDocuments({ _id: res.body.id })).toBe(0);
    const list = await stack.admin.get(`/api/auth/api-keys?firmSlug=${firm.slug}`);
    expect(list.body.map((k: { id: string }) => k.id)).not.toContain(res.body.id);
    expectError(await stack.api.withToken(res.body.key).get(`/api/firms/${firm.slug}`), 401, 'unauthorized');
  });

  it('unknown fields in the request are rejected', async () => {
    const res = await stack.admin.post('/api/auth/api-keys', {
      firmSlug: firm.slug,
      name: 'x',
      key: 'isk_chosen_by_client',
    });
    expectError(res, 400, 'invalid_request');
  });
});
