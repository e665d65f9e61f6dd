// A path no route has is 404 in the error shape whatever the method (a 405
// must carry Allow, RFC 9110 §15.5.6, and such a path allows nothing); a path some route has
// answers a method it lacks with 405 and Allow. Over a real socket: fetch refuses TRACE.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowOf, sendAnyMethod } from '../helpers/any-method.js';
import { expectError } from '../helpers/expect-error.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const UNKNOWN_PATHS = [
  '/no-such-path',
  '/api/no-such-thing',
  '/api/v2/no-such-operation',
  '/api/firms/a/b/c',
];
/** Methods the routes have, OPTIONS, and methods no route has (node's parser knows them). */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'QUERY', 'PURGE'];

/** The methods the routes give a path, HEAD with GET. */
function methodsOf(template: string): string[] {
  const methods = new Set<string>();
  for (const route of stack.web.app.routes) {
    if (route.path !== template) continue;
    methods.add(route.method);
    if (route.method === 'GET') methods.add('HEAD');
  }
  return [...methods].sort();
}

describe('a path no route has: 404 route_not_found, whatever the method', () => {
  it('every method, with and without a token, is a 404 in the error shape, without Allow', async () => {
    for (const path of UNKNOWN_PATHS) {
      for (const method of METHODS) {
        for (const headers of [{}, { Authorization: `Bearer ${stack.config.adminApiKey}` }] as Record<
          string,
          string
        >[]) {
          const res = await sendAnyMethod(stack.baseUrl, method, path, { headers });
          expectError(res, 404, 'route_not_found');
          expect(res.headers.get('allow'), `${method} ${path}`).toBeNull();
        }
      }
    }
  });

  it('HEAD is a 404 too (no body, as HEAD never has one)', async () => {
    const res = await sendAnyMethod(stack.baseUrl, 'HEAD', '/no-such-path');
    expect(res.status).toBe(404);
    expect(res.headers.get('allow')).toBeNull();
  });
});

describe('a path a route has: 405 with Allow for a method it lacks', () => {
  it('TRACE, PATCH, PROPFIND and QUERY on /api/firms and /healthz: 405 method_not_allowed with Allow', async () => {
    for (const [template, path] of [
      ['/api/firms', '/api/firms'],
      ['/healthz', '/healthz'],
    ] as const) {
      const allow = methodsOf(template);
      expect(allow.length).toBeGreaterThan(0);
      for (const method of ['TRACE', 'PATCH', 'PROPFIND', 'QUERY']) {
        if (allow.includes(method)) continue;
        const res = await sendAnyMethod(stack.baseUrl, method, path);
        expectError(res, 405, 'method_not_allowed');
        expect(allowOf(res), `${method} ${path}`).toEqual(allow);
      }
    }
  });

  it('OPTIONS on a known path is 200 with Allow', async () => {
    const res = await sendAnyMethod(stack.baseUrl, 'OPTIONS', '/healthz');
    expect(res.status).toBe(200);
    expect(allowOf(res)).toEqual(methodsOf('/healthz'));
  });
});
