// A firm's own paths are /api/v2/{firm}/…; the operations under /api/v2/ are names no firm may take
// (core/domain/firms/reserved-slugs.ts), else a path of that firm's would match the operation's
// route first. The list is the route table's, kept so by this test.
import { describe, expect, it } from 'vitest';
import { businessRoutes } from '../../api/routes/index.js';
import { RESERVED_SLUGS, refuseReservedSlug } from '../../core/domain/firms/reserved-slugs.js';
import { AppError } from '../../core/platform/errors.js';

describe('reserved firm slugs', () => {
  it('are exactly the literal names under /api/v2/ in the route table', () => {
    const names = new Set<string>();
    for (const route of businessRoutes) {
      const segment = /^\/api\/v2\/([^/{}]+)/.exec(route.path)?.[1];
      if (segment !== undefined) names.add(segment);
    }
    expect(names.has('get-call')).toBe(true);
    expect([...RESERVED_SLUGS].sort()).toEqual([...names].sort());
  });

  it('refuse such a slug with a 400 naming /slug, and let any other through', () => {
    let thrown: unknown;
    try {
      refuseReservedSlug('get-call');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({
      status: 400,
      code: 'invalid_request',
      details: [{ path: '/slug', message: 'is reserved' }],
    });
    expect(() => refuseReservedSlug('get-calls')).not.toThrow();
  });
});
