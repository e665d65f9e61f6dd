import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRM_SLUG_PATTERN } from '../../core/domain/firms/firm-slug.js';
import { signSessionToken } from '../../core/domain/access/session.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const firmsInDb = (slug: string) =>
  stack.services.mongo.db.collection('firms').countDocuments({ _id: slug as never });

/** A create that must be rejected with 400 naming `pointer`, and leave no firm behind. */
async function expectRejectedCreate(body: Record<string, unknown>, pointer: string): Promise<void> {
  const res = await stack.admin.post('/api/firms', body);
  expectError(res, 400, 'invalid_request');
  expect(detailPaths(res)).toContain(pointer);
  if (typeof body.slug === 'string') {
    expect(await firmsInDb(body.slug)).toBe(0);
    if (new RegExp(FIRM_SLUG_PATTERN).test(body.slug)) {
      expectError(await stack.admin.get(`/api/firms/${body.slug}`), 404, 'firm_not_found');
    }
  }
}

describe('400 invalid_request names each bad field by JSON pointer', () => {
  it('an unknown top-level field (a typo) is rejected, not ignored', async () => {
    await expectRejectedCreate({ slugg: `f-${rand(4)}`, name: 'Typo' }, '/slugg');
    await expectRejectedCreate({ slug: `f-${rand(4)}`, name: 'Typo', setings: {} }, '/setings');
  });

  it('an object where a string is expected ({"$ne": null}) is a 400', async () => {
    await expectRejectedCreate({ slug: { $ne: null }, name: 'Injection' }, '/slug');
    const res = await stack.admin.get('/api/auth/api-keys?firmSlug[$ne]=x');
    expectError(res, 400, 'invalid_request');
  });

  it('a string where an object is expected is a 400', async () => {
    await expectRejectedCreate({ slug: `f-${rand(4)}`, name: 'X', settings: 'timezone=UTC' }, '/settings');
  });

  it('a slug that does not match the pattern', async () => {
    for (const slug of ['Bad_Slug', '-leading', 'trailing-', 'a'.repeat(64), '']) {
      await expectRejectedCreate({ slug, name: 'Bad slug' }, '/slug');
    }
  });

  it('bad settings: timezone "Mars/Base", notification_emails ["nope"], and more', async () => {
    const slug = `f-${rand(4)}`;
    await expectRejectedCreate(
      { slug, name: 'X', settings: { timezone: 'Mars/Base' } },
      '/settings/timezone',
    );
    await expectRejectedCreate(
      { slug, name: 'X', settings: { notification_emails: ['ok@example.com', 'nope'] } },
      '/settings/notification_emails/1',
    );
    await expectRejectedCreate(
      { slug, name: 'X', settings: { from_number: '555-1234' } },
      '/settings/from_number',
    );
    await expectRejectedCreate(
      { slug, name: 'X', settings: { calling_window: { start: '25:00', end: '20:00', days: [1] } } },
      '/settings/calling_window/start',
    );
    await expectRejectedCreate(
      { slug, name: 'X', settings: { unknown_setting: 1 } },
      '/settings/unknown_setting',
    );
  });

  it('every bad field is named at once', async () => {
    const res = await stack.admin.post('/api/firms', {
      slug: 'Bad_Slug',
      name: '',
      extra: true,
      settings: { timezone: 'Mars/Base' },
    });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(
      expect.arrayContaining(['/slug', '/name', '/extra', '/settings/timezone']),
    );
  });

  it('a missing required field is named', async () => {
    const res = await stack.admin.post('/api/firms', { name: 'No slug' });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toContain('/slug');
  });

  it('a bad path parameter and a missing query parameter are 400', async () => {
    expectError(await stack.admin.get('/api/firms/NOT_A_SLUG'), 400, 'invalid_request');
    expectError(await stack.admin.get('/api/auth/api-keys'), 400, 'invalid_request');
  });

  it('unparseable JSON is a 400', async () => {
    const slug = `f-${rand(4)}`;
    const res = await stack.admin.request('POST', '/api/firms', {
      rawBody: `{"slug": "${slug}", "name": `,
      headers: { 'Content-Type': 'application/json' },
    });
    expectError(res, 400, 'invalid_request');
    expect(await firmsInDb(slug)).toBe(0);
  });

  it('a JSON body that is not an object is a 400', async () => {
    for (const rawBody of ['[]', '"firm"', '42']) {
      const res = await stack.admin.request('POST', '/api/firms', {
        rawBody,
        headers: { 'Content-Type': 'application/json' },
      });
      expectError(res, 400, 'invalid_request');
    }
  });
});

describe('404', () => {
  it('firm_not_found for an unknown slug with the platform key', async () => {
    expectError(await stack.admin.get(`/api/firms/no-such-${rand(4)}`), 404, 'firm_not_found');
    expectError(
      await stack.admin.patch(`/api/firms/no-such-${rand(4)}`, { name: 'X' }),
      404,
      'firm_not_found',
    );
    expectError(
      await stack.admin.post('/api/auth/api-keys', { firmSlug: `no-such-${rand(4)}`, name: 'k' }),
      404,
      'firm_not_found',
    );
  });

  it('an unknown route', async () => {
    expectError(await stack.admin.get('/api/no-such-route'), 404, 'route_not_found');
    expectError(await stack.api.get('/nothing/here'), 404, 'route_not_found');
  });
});

describe('409 firm_exists', () => {
  it('a taken slug is a conflict and the first firm is unchanged', async () => {
    const slug = `f-${rand(4)}`;
    expect((await stack.admin.post('/api/firms', { slug, name: 'First' })).status).toBe(200);
    expectError(await stack.admin.post('/api/firms', { slug, name: 'Second' }), 409, 'firm_exists');
    expect((await stack.admin.get(`/api/firms/${slug}`)).body.name).toBe('First');
    expect(await firmsInDb(slug)).toBe(1);
  });
});

describe('413 and 415', () => {
  it('413 payload_too_large for a body over 2 MiB, and nothing is stored', async () => {
    const slug = `f-${rand(4)}`;
    const res = await stack.admin.post('/api/firms', { slug, name: 'x'.repeat(2 * 1024 * 1024 + 10) });
    expectError(res, 413, 'payload_too_large');
    expect(await firmsInDb(slug)).toBe(0);
  });

  it('a body just under 2 MiB is read (and then judged by the schema)', async () => {
    const res = await stack.admin.post('/api/firms', { slug: `f-${rand(4)}`, name: 'x'.repeat(2_000_000) });
    expectError(res, 400, 'invalid_request');
    expect(detailPaths(res)).toEqual(['/name']);
  });

  it('415 unsupported_media_type for a text/plain body, and nothing is stored', async () => {
    const slug = `f-${rand(4)}`;
    const res = await stack.admin.request('POST', '/api/firms', {
      rawBody: JSON.stringify({ slug, name: 'Plain' }),
      headers: { 'Content-Type': 'text/plain' },
    });
    expectError(res, 415, 'unsupported_media_type');
    expect(await firmsInDb(slug)).toBe(0);
  });

  it('every type taken as JSON is read as JSON: a +json type of any kind, with or without a charset', async () => {
    // The 415 check lets any `*/*+json` through; a body it lets through is parsed, never dropped
    // (read as an empty body, a request would be judged as if it had sent nothing).
    for (const type of [
      'application/json;charset=UTF-8',
      'application/vnd.api+json',
      'text/x-intake+json',
      'application/merge-patch+json; charset=utf-8',
    ]) {
      const slug = `f-${rand(4)}`;
      const res = await stack.admin.request('POST', '/api/firms', {
        rawBody: JSON.stringify({ slug, name: 'Typed' }),
        headers: { 'Content-Type': type },
      });
      expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(await firmsInDb(slug)).toBe(1);
    }
  });

  it('415 for a form-encoded PATCH', async () => {
    const firm = await createFirm(stack);
    const res = await firm.client.request('PATCH', `/api/firms/${firm.slug}`, {
      rawBody: 'name=Changed',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectError(res, 415, 'unsupported_media_type');
  });
});

describe('429 rate_limited', () => {
  let limited: Stack;
  beforeAll(async () => {
    limited = await startStack({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
  });
  afterAll(async () => limited?.stop());

  it('is per token, with Retry-After', async () => {
    const slug = `f-${rand(4)}`;
    expect((await limited.admin.post('/api/firms', { slug, name: 'Limited' })).status).toBe(200);
    const statuses: number[] = [];
    let rejected;
    // Five a minute: twelve quick requests overrun the limit even if a minute boundary falls in between.
    for (let i = 0; i < 12; i++) {
      const res = await limited.admin.get(`/api/firms/${slug}`);
      statuses.push(res.status);
      if (res.status === 429) rejected = res;
    }
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(4);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expectError(rejected!, 429, 'rate_limited');
    const retryAfter = Number(rejected!.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // A request counts for 60 to 65 s (sliding windows in 5-second buckets).
    expect(retryAfter).toBeLessThanOrEqual(65);

    // Another token has its own budget; health checks are never limited.
    const other = limited.api.withToken(
      await signSessionToken({ firm: slug, sub: 'u' }, limited.config.sessionSecret, 300),
    );
    expect((await other.get(`/api/firms/${slug}`)).status).toBe(200);
    expect((await limited.api.get('/healthz')).status).toBe(200);
  });
});
