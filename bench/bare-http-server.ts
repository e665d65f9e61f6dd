// A bare node:http server issuing exactly the store calls of create-outbound-call and of the
// call webhook (the ones their "direct" baselines issue), and nothing else: no Koa, no router,
// no validation, no request id, log or metrics. Run by bench/lib/bare-http.ts as a child
// process beside the web process; the gap between it and the direct baselines is what Node's
// HTTP stack costs, the gap between the routes and it what the service adds. Under /koa/ the
// same handlers run in a bare Koa app: what the framework alone adds.
//   POST /create   {toNumber, dynamicVariables}  → rate-limit script, the dial gate's request step
//                                                   beside the call insert, place-call add
//   POST /webhook  a signed call_analyzed        → HMAC over the bytes, webhook limit (a look,
//                                                   then a count), parse, snapshot, call-event add
import { createServer, type IncomingMessage } from 'node:http';
import Koa from 'koa';
import { MongoClient } from 'mongodb';
import { unlimitedLimiter } from './lib/unlimited-limiter.js';
import { findAgent } from '../core/domain/agents/agents.js';
import { callsCollection, newOutboundCall } from '../core/domain/calls/calls.js';
import { snapshotProviderCall } from '../core/domain/calls/provider-call.js';
import { getFirm } from '../core/domain/firms/firms.js';
import { verifyRetellSignature } from '../core/integrations/voice/webhook-signature.js';
import { createRedis } from '../core/platform/redis.js';
import { registerKeyring } from '../core/platform/secrets/data-keys.js';
import { createKeyring } from '../core/platform/secrets/envelope.js';
import { redisKeys } from '../core/platform/redis-keys.js';
import { peekIndex } from '../core/domain/compliance/dnc-index.js';
import { DAY_MS } from '../core/domain/compliance/frequency.js';
import { createQueues } from '../jobs/queues.js';
import { JOBS } from '../jobs/table.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};

const prefix = env('QUEUE_PREFIX');
const slug = env('BARE_FIRM');
const secret = env('BARE_SECRET');
const redis = createRedis({ url: env('REDIS_URL') }, 'producer');
const keys = redisKeys({ queuePrefix: prefix, redisCluster: false });
const queues = createQueues(redis, keys, () => {});
const mongo = new MongoClient(env('MONGODB_URI'));
const db = mongo.db();
// The firm's webhook secret is sealed at rest: opening it needs the master key the service uses.
registerKeyring(db, createKeyring(env('SECRETS_KEY')));
const limiter = unlimitedLimiter(redis, keys, 'bare-http');
const firm = await getFirm(db, slug);
const agent = await findAgent(db, env('BARE_AGENT'));
if (firm === null || agent === null) throw new Error('bare-http: the firm or agent is missing');
const principal = { kind: 'firm' as const, firm: firm._id, via: 'api_key' as const, subject: 'bare-http' };
const calls = callsCollection(db);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function create(raw: Buffer): Promise<unknown> {
  const body = JSON.parse(raw.toString('utf8')) as {
    toNumber: string;
    dynamicVariables?: Record<string, string>;
  };
  await limiter.checkPrincipal(principal);
  const doc = newOutboundCall(
    { firm: firm!, agent: agent!, toNumber: body.toNumber, dynamicVariables: body.dynamicVariables ?? {} },
    'simulator',
  );
  await Promise.all([
    peekIndex(redis, keys, firm!._id, body.toNumber, Date.now() - DAY_MS),
    calls.insertOne(doc),
  ]);
  await queues.calls.add(JOBS.placeCall.name, { callId: doc._id, firm: doc.firm }, { jobId: doc._id });
  return { call_id: doc._id, status: doc.status };
}

async function webhook(req: IncomingMessage, raw: Buffer): Promise<unknown> {
  await limiter.checkWebhook(slug, false);
  if (!verifyRetellSignature(raw, secret, String(req.headers['x-retell-signature'] ?? ''))) {
    throw new Error('bad signature');
  }
  await limiter.countWebhook(slug);
  const body = JSON.parse(raw.toString('utf8')) as {
    event: 'call_analyzed';
    call: Record<string, unknown> & { call_id: string };
  };
  const data = {
    firm: slug,
    event: body.event,
    call: snapshotProviderCall(body.call),
    received_at: Date.now(),
  };
  const def = JOBS.callEvent;
  await queues[def.queue].add(def.name, data, { ...def.options, jobId: def.id!(data) });
  return { received: true };
}

// The same two handlers under a bare Koa app (its context, middleware dispatch and response, and
// nothing of the service's): /koa/create and /koa/webhook. What Koa itself adds to Node's HTTP.
const koa = new Koa();
koa.silent = true;
koa.use(async (ctx) => {
  const raw = await readBody(ctx.req);
  ctx.body = await (ctx.path === '/koa/create' ? create(raw) : webhook(ctx.req, raw));
});
const viaKoa = koa.callback();

const server = createServer((req, res) => {
  if (req.url?.startsWith('/koa/') === true) {
    void viaKoa(req, res);
    return;
  }
  readBody(req)
    .then((raw) => (req.url === '/create' ? create(raw) : webhook(req, raw)))
    .then(
      (result) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(result));
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      },
    );
});
server.listen(Number(env('PORT')), '127.0.0.1');
const stop = (): void => {
  server.close();
  void Promise.all([queues.calls.close(), mongo.close()]).finally(() => {
    redis.disconnect();
    process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
