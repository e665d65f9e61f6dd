// The bare server's handlers (bench/lib/bare-handlers.ts) inside the web process itself: loaded
// before the web's own entry (NODE_OPTIONS `--import tsx --import <this file>`, set by
// bench/lib/bare-http.ts `bareInWebEnv` for the create-call and webhooks scenarios only),
// listening on BARE_IN_WEB_PORT beside the service's port, and set up by POST /setup
// {firm, agent, secret} once the firm exists (it is made through the web's own API). So the same
// bare handler runs in a process of its own and in the process the service runs in: with its
// heap (every route's compiled validators, Bull Board, the read cache), its timers and its
// collector: what no route of that process can beat (docs/performance.md, "The request paths: the
// bare handler inside the web process"; measured at 0.93–1.02 of the bare server). Beside it, at
// the two routes' own paths, their duties done without Koa (bench/lib/duties-handler.ts). The bench runs without tracing; with it, these imports would come first.
import { isMainThread } from 'node:worker_threads';
import { bareHandlers, bareServer, type BareHandlers } from './lib/bare-handlers.js';
import { routeDuties, type DutiesHandler } from './lib/duties-handler.js';
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices } from '../core/wiring/services.js';

let handlers: BareHandlers | null = null;
// The two routes' duties over services of their own, made as the web makes its own.
let duties: DutiesHandler | null = null;
const env = (name: string): string => process.env[name] ?? '';

const server = bareServer(
  () => handlers,
  async (raw) => {
    const o = JSON.parse(raw.toString('utf8')) as { firm: string; agent: string; secret: string };
    handlers ??= await bareHandlers({
      redisUrl: env('REDIS_URL'),
      mongodbUri: env('MONGODB_URI'),
      queuePrefix: env('QUEUE_PREFIX'),
      secretsKey: env('SECRETS_KEY'),
      ...o,
    });
    if (duties === null) {
      const config = loadConfig(process.env);
      duties = routeDuties(createServices(config, createLogger(config.logLevel, 'duties'), 'producer'));
    }
    // The process it runs in: the bench checks that it is the web's.
    return { pid: process.pid };
  },
  () => duties,
);
// Node runs an `--import` in its module loader's thread too (tsx's hooks): listen in the main one.
if (isMainThread) {
  server.listen(Number(env('BARE_IN_WEB_PORT')), '127.0.0.1');
  // Never what keeps the web process alive: it stops and exits as it does without this.
  server.unref();
}
