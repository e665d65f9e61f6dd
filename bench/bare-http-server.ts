// A bare node:http server issuing exactly the store calls of create-outbound-call and of the
// call webhook (bench/lib/bare-handlers.ts), and nothing else. Run by bench/lib/bare-http.ts as a
// child process beside the web process; the gap between it and the direct baselines is what
// Node's HTTP stack costs, the gap between the routes and it what the service adds. Under /koa/
// the same handlers run in a bare Koa app: what the framework alone adds.
import { bareHandlers, bareServer } from './lib/bare-handlers.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};

const handlers = await bareHandlers({
  redisUrl: env('REDIS_URL'),
  mongodbUri: env('MONGODB_URI'),
  queuePrefix: env('QUEUE_PREFIX'),
  secretsKey: env('SECRETS_KEY'),
  firm: env('BARE_FIRM'),
  agent: env('BARE_AGENT'),
  secret: env('BARE_SECRET'),
});
const server = bareServer(() => handlers);
server.listen(Number(env('PORT')), '127.0.0.1');
const stop = (): void => {
  server.close();
  void handlers.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
