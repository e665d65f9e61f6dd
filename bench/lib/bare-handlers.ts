// The bare server's handlers (bench/bare-http-server.ts): exactly the store calls of
// create-outbound-call and of the call webhook (the ones their "direct" baselines issue), and
// nothing else: no Koa, no router, no validation, no request id, log or metrics.
//   POST /create   {toNumber, dynamicVariables}  → rate-limit script, the dial gate's request step
//                                                   beside the call insert, place-call add
//   POST /webhook  a signed call_analyzed        → HMAC over the bytes, webhook limit (a look,
//                                                   then a count), parse, snapshot, call-event add
// Under /koa/ the same handlers run in a bare Koa app: what the framework alone adds.
// They run in a process of their own (bench/bare-http-server.ts) and inside the web process
// itself (bench/bare-in-web.ts): the same handler in the process the service runs in.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import Koa from 'koa';
import { MongoClient } from 'mongodb';
import { unlimitedLimiter } from './unlimited-limiter.js';
import { findAgent } from '../../core/domain/agents/agents.js';
import { callsCollection, newOutboundCall } from '../../core/domain/calls/calls.js';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { verifyRetellSignature } from '../../core/integrations/voice/webhook-signature.js';
import { createRedis } from '../../core/platform/redis.js';
import { registerKeyring } from '../../core/platform/secrets/data-keys.js';
import { createKeyring } from '../../core/platform/secrets/envelope.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { peekIndex } from '../../core/domain/compliance/dnc-index.js';
import { DAY_MS } from '../../core/domain/compliance/frequency.js';
import { createQueues } from '../../jobs/queues.js';
import { JOBS } from '../../jobs/table.js';
import type { DutiesHandler } from './duties-handler.js';

export interface BareOptions {
  redisUrl: string;
  mongodbUri: string;
  queuePrefix: string;
  /** The service's master key: the firm's webhook secret is sealed at rest. */
  secretsKey: string;
  firm: string;
  agent: string;
  /** The firm's webhook secret, for the signature check. */
  secret: string;
}

export interface BareHandlers {
  create(raw: Buffer): Promise<unknown>;
  webhook(req: IncomingMessage, raw: Buffer): Promise<unknown>;
  close(): Promise<void>;
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The two handlers over their own Redis and MongoDB clients. */
export async function bareHandlers(o: BareOptions): Promise<BareHandlers> {
  const redis = createRedis({ url: o.redisUrl }, 'producer');
  const keys = redisKeys({ queuePrefix: o.queuePrefix, redisCluster: false });
  const queues = createQueues(redis, keys, () => {});
  const mongo = new MongoClient(o.mongodbUri);
  const db = mongo.db();
  registerKeyring(db, createKeyring(o.secretsKey));
  const limiter = unlimitedLimiter(redis, keys, 'bare-http');
  const firm = await getFirm(db, o.firm);
  const agent = await findAgent(db, o.agent);
  if (firm === null || agent === null) throw new Error('bare-http: the firm or agent is missing');
  const principal = { kind: 'firm' as const, firm: firm._id, via: 'api_key' as const, subject: 'bare-http' };
  const calls = callsCollection(db);
  return {
    async create(raw) {
      const body = JSON.parse(raw.toString('utf8')) as {
        toNumber: string;
        dynamicVariables?: Record<string, string>;
      };
      await limiter.checkPrincipal(principal);
      const doc = newOutboundCall(
        { firm, agent, toNumber: body.toNumber, dynamicVariables: body.dynamicVariables ?? {} },
        'simulator',
      );
      await Promise.all([
        peekIndex(redis, keys, firm._id, body.toNumber, Date.now() - DAY_MS),
        calls.insertOne(doc),
      ]);
      await queues.calls.add(JOBS.placeCall.name, { callId: doc._id, firm: doc.firm }, { jobId: doc._id });
      return { call_id: doc._id, status: doc.status };
    },
    async webhook(req, raw) {
      await limiter.checkWebhook(o.firm, false);
      if (!verifyRetellSignature(raw, o.secret, String(req.headers['x-retell-signature'] ?? ''))) {
        throw new Error('bad signature');
      }
      await limiter.countWebhook(o.firm);
      const body = JSON.parse(raw.toString('utf8')) as {
        event: 'call_analyzed';
        call: Record<string, unknown> & { call_id: string };
      };
      const data = {
        firm: o.firm,
        event: body.event,
        call: snapshotProviderCall(body.call),
        received_at: Date.now(),
      };
      const def = JOBS.callEvent;
      await queues[def.queue].add(def.name, data, { ...def.options, jobId: def.id!(data) });
      return { received: true };
    },
    async close() {
      await Promise.all([...Object.values(queues).map((q) => q.close()), mongo.close()]);
      redis.disconnect();
    },
  };
}

/**
 * A node:http server answering /create and /webhook with `handlers()` (null until they are set
 * up: 503), and /koa/create and /koa/webhook with the same under a bare Koa app; with `setup`,
 * POST /setup hands it the body and answers what it resolves to, as JSON; with `duties`, the paths
 * under /api/ (create-outbound-call's and the call webhook's) are answered by them once set up.
 */
export function bareServer(
  handlers: () => BareHandlers | null,
  setup?: (raw: Buffer) => Promise<unknown>,
  /** The two routes' duties (bench/lib/duties-handler.ts), served at the routes' own paths. */
  duties?: () => DutiesHandler | null,
): Server {
  const serve = (path: string | undefined, req: IncomingMessage, raw: Buffer): Promise<unknown> => {
    const h = handlers();
    if (h === null) throw new Error('not set up');
    return path?.endsWith('/create') === true ? h.create(raw) : h.webhook(req, raw);
  };
  const koa = new Koa();
  koa.silent = true;
  koa.use(async (ctx) => {
    const raw = await readBody(ctx.req);
    ctx.body = await serve(ctx.path, ctx.req, raw);
  });
  const viaKoa = koa.callback();
  return createServer((req, res) => {
    const withDuties = duties?.() ?? null;
    if (withDuties !== null && req.url?.startsWith('/api/') === true) {
      void withDuties(req, res);
      return;
    }
    if (req.url?.startsWith('/koa/') === true) {
      void viaKoa(req, res);
      return;
    }
    if (setup !== undefined && req.url === '/setup') {
      readBody(req)
        .then(setup)
        .then(
          (answer) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)),
          (err: unknown) => res.writeHead(500).end(String(err)),
        );
      return;
    }
    readBody(req)
      .then((raw) => serve(req.url, req, raw))
      .then(
        (result) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(result));
        },
        (err: unknown) => {
          res.writeHead(handlers() === null ? 503 : 500, { 'content-type': 'text/plain' });
          res.end(String(err));
        },
      );
  });
}
