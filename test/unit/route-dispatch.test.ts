// The router's dispatch without a chain built per request (api/route-dispatch.ts): it answers
// every request as @koa/router's own dispatch does, over a real socket, and asks the router to
// match a method and path once.
import { Router } from '@koa/router';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedMethods } from '../../api/middleware/methods.js';
import { errorHandler } from '../../api/middleware/errors.js';
import { routeDispatch } from '../../api/route-dispatch.js';
import { createLogger } from '../../core/platform/logger.js';

interface Seen {
  route?: string | RegExp;
  name?: string;
  params?: Record<string, string>;
  matched?: number;
}

/** A router like buildRouter's: each route registered with its chain and its operation's name. */
function makeRouter(): Router {
  const router = new Router();
  const answer =
    (label: string): Koa.Middleware =>
    (ctx) => {
      ctx.body = { label, params: (ctx as unknown as { params: Record<string, string> }).params };
    };
  const step: Koa.Middleware = async (ctx, next) => {
    ctx.set('X-Step', 'ran');
    await next();
  };
  router.register('/things/:id', ['GET'], [step, answer('getThing')], { name: 'getThing' });
  // Matches /things/special too, registered second: the first route answers, as the router's own.
  router.register('/things/special', ['GET'], [answer('getSpecial')], { name: 'getSpecial' });
  router.register('/things', ['POST'], [answer('createThing')], { name: 'createThing' });
  router.register('/things/:id/parts/:part', ['DELETE'], [answer('deletePart')], { name: 'deletePart' });
  return router;
}

/** An app as api/app.ts builds it around the router: the error shape, the dispatch, the methods. */
function makeApp(own: boolean): { server: Server; matches: () => number; seen: Seen[] } {
  const router = makeRouter();
  let matches = 0;
  const match = router.match.bind(router);
  router.match = (path, method) => {
    matches += 1;
    return match(path, method);
  };
  const seen: Seen[] = [];
  const koa = new Koa();
  koa.silent = true;
  koa.use(async (ctx, next) => {
    await next();
    const routed = ctx as unknown as {
      _matchedRoute?: string | RegExp;
      _matchedRouteName?: string;
      params?: Record<string, string>;
      matched?: unknown[];
    };
    seen.push({
      route: routed._matchedRoute,
      name: routed._matchedRouteName,
      params: routed.params,
      matched: routed.matched?.length,
    });
  });
  koa.use(errorHandler(createLogger('silent', 'route-dispatch-test')));
  koa.use(own ? routeDispatch(router).dispatch : (router.routes() as unknown as Koa.Middleware));
  koa.use(allowedMethods(router));
  return { server: createServer(koa.callback()), matches: () => matches, seen };
}

const REQUESTS: Array<[string, string]> = [
  ['GET', '/things/a%20b'],
  ['GET', '/things/c'],
  ['GET', '/things/c'],
  ['GET', '/things/special'],
  ['HEAD', '/things/c'],
  ['POST', '/things'],
  ['GET', '/things'],
  ['OPTIONS', '/things'],
  ['PUT', '/things/c'],
  ['PROPFIND', '/things/c'],
  ['DELETE', '/things/x/parts/y%2Fz'],
  ['GET', '/nothing/here'],
  ['GET', '/things/c/parts/d'],
];

let ours: ReturnType<typeof makeApp>;
let theirs: ReturnType<typeof makeApp>;
const base = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

beforeAll(async () => {
  ours = makeApp(true);
  theirs = makeApp(false);
  for (const { server } of [ours, theirs])
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  for (const { server } of [ours, theirs])
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
});

async function send(server: Server, method: string, path: string) {
  const res = await fetch(`${base(server)}${path}`, { method });
  return {
    status: res.status,
    allow: res.headers.get('allow'),
    step: res.headers.get('x-step'),
    body: await res.text(),
  };
}

describe('the route dispatch', () => {
  it('answers every request as @koa/router’s own dispatch does: route, parameters, 404, 405, OPTIONS', async () => {
    for (const [method, path] of REQUESTS) {
      const mine = await send(ours.server, method, path);
      const reference = await send(theirs.server, method, path);
      expect(mine, `${method} ${path}`).toEqual(reference);
    }
    // What the requests' context held after the dispatch (the metrics' route label, the params).
    expect(ours.seen).toEqual(theirs.seen);
    expect(ours.seen[0]).toEqual({
      route: '/things/:id',
      name: 'getThing',
      params: { id: 'a b' },
      matched: 1,
    });
    expect(ours.seen[1]!.params).toEqual({ id: 'c' });
    // Two routes match /things/special: both are matched, the first registered answers.
    expect(ours.seen[3]).toMatchObject({ name: 'getThing', matched: 2 });
    expect(JSON.parse((await send(ours.server, 'GET', '/things/special')).body).label).toBe('getThing');
    expect(JSON.parse((await send(ours.server, 'DELETE', '/things/x/parts/y%2Fz')).body)).toEqual({
      label: 'deletePart',
      params: { id: 'x', part: 'y/z' },
    });
    const refused = await send(ours.server, 'PUT', '/things/c');
    expect(refused.status).toBe(405);
    expect(JSON.parse(refused.body).error.code).toBe('method_not_allowed');
    expect((await send(ours.server, 'GET', '/nothing/here')).status).toBe(404);
  });

  it('asks the router to match a method and path once, however many requests name them', async () => {
    const before = ours.matches();
    for (let i = 0; i < 5; i++) expect((await send(ours.server, 'GET', '/things/again')).status).toBe(200);
    expect((await send(ours.server, 'GET', '/things/other')).status).toBe(200);
    expect(ours.matches() - before).toBe(2);
    // The router's own dispatch matches on every request.
    const theirsBefore = theirs.matches();
    for (let i = 0; i < 5; i++) await send(theirs.server, 'GET', '/things/again');
    expect(theirs.matches() - theirsBefore).toBe(5);
  });
});
