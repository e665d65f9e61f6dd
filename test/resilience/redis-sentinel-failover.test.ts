// Redis failover through Sentinel: a primary, a replica and three Sentinels on loopback, the
// real web and worker processes given only REDIS_SENTINELS / REDIS_SENTINEL_NAME (REDIS_URL
// names no server), calls created at a steady rate (each with an Idempotency-Key, retried on
// a 503 as a client should) and the simulator's webhooks flowing — then the primary is
// SIGKILLed. The service must follow the promoted replica without a restart, and the only
// acknowledged work allowed to be lost is what the primary had not yet replicated when it died
// (replication is asynchronous). To make that window countable the replica's link is held for a
// moment before the kill (a lag, stretched): work acknowledged in it is lost, and nothing
// acknowledged after the failover is (the lines printed show each lost call inside the window).
// Nothing may be doubled: one call record per key, at most one lead per call.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/platform/logger.js';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { loadConfig } from '../../core/platform/config.js';
import { createRedis, redisSettings } from '../../core/platform/redis.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { closeQueues, createQueues } from '../../jobs/queues.js';
import { DRAIN_INTERVAL_MS } from '../../core/domain/deliveries/delivery-outbox.js';
import type { CallDoc } from '../../core/domain/calls/calls.js';
import { simulatorCalls } from '../../core/integrations/voice/simulator.js';
import { jobId, type JobDefinition } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import { TEST_COMPLIANCE_ENV, freshMongoUri, rand } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { startSentinelGroup, type SentinelGroup } from '../helpers/sentinel-redis.js';
import { startServiceProcesses } from '../helpers/service-processes.js';
import { callOutcomes, createCall, firmWithAgent, type Firm } from '../helpers/call-load.js';

/** New calls per second while the load runs, and how long it runs before and after the kill. */
const RATE_PER_S = 10;
const CALLS_BEFORE_HOLD = 30;
/** Create-calls acknowledged while replication is held, before the kill. */
const ACKS_IN_HOLD = 8;
const LOAD_AFTER_KILL_MS = 6_000;

let dir: string;
let group: SentinelGroup;
let mongo: Mongo;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'redis-sentinel-'));
  group = await startSentinelGroup(dir);
  const mongodbUri = freshMongoUri();
  mongo = createMongo(mongodbUri, { log: createLogger('silent', 'test') });
  await ensureIndexes(mongo.db);
  env = {
    // Only the Sentinels say where Redis is: this host does not exist.
    REDIS_URL: 'redis://redis-primary.invalid:6379/0',
    REDIS_SENTINELS: group.sentinelList,
    REDIS_SENTINEL_NAME: group.name,
    MONGODB_URI: mongodbUri,
    ADMIN_API_KEY: `adm_${rand(16)}`,
    SESSION_SECRET: rand(24),
    SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
    ...TEST_COMPLIANCE_ENV,
    QUEUE_PREFIX: `t${rand(4)}`,
    SIM_CALL_MS: '200',
    ALLOW_PRIVATE_URLS: 'true',
    // A job whose worker lost its primary mid-run is taken over soon, and its effects.
    JOB_LOCK_MS: '5000',
    EFFECT_LEASE_MS: '5000',
    EFFECT_LEASE_CLOCK_MARGIN_MS: '500',
    // A lost call is swept seconds after, not minutes (docs/calls.md#lost-calls): its place-call
    // job added again (LOST_DIAL_AFTER_MS is longer than any create-call here takes), or the
    // simulator asked about a dialled call whose events stopped (longer than a call here lasts).
    LOST_CALL_SWEEP_MS: '1000',
    LOST_DIAL_AFTER_MS: '3000',
    LOST_END_AFTER_MS: '3000',
    // A scheduler's next run lost with the primary is added again within a second.
    JOB_SCHEDULES_CHECK_MS: '1000',
  };
});
afterAll(async () => {
  await mongo?.db.dropDatabase().catch(() => {});
  await mongo?.close();
  await group?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The place-call jobs, call events and analyses the lost-call sweep added, from its log lines. */
function sweptJobs(output: string): {
  lost_dials_readded: number;
  lost_call_events: number;
  lost_analyses_rerun: number;
} {
  let readded = 0;
  let events = 0;
  let reanalysed = 0;
  for (const line of output.split('\n')) {
    if (!line.includes('lost calls: taken up')) continue;
    const logged = JSON.parse(line) as { readded: number; events: number; reanalysed: number };
    readded += logged.readded;
    events += logged.events;
    reanalysed += logged.reanalysed;
  }
  return { lost_dials_readded: readded, lost_call_events: events, lost_analyses_rerun: reanalysed };
}

interface Request {
  key: string;
  index: number;
  sentAt: number;
  answers: number[];
  ackAt?: number;
  callId?: string;
}

/** One request per key, repeated with the same Idempotency-Key until it is acknowledged (200). */
async function untilAcknowledged(firm: Firm, request: Request, until: () => boolean): Promise<void> {
  for (;;) {
    const answer = await createCall(firm, request.key, request.index);
    request.answers.push(answer.status);
    if (answer.status === 200) {
      request.ackAt = answer.at;
      request.callId = answer.callId!;
      return;
    }
    if (until()) return;
    await sleep(250);
  }
}

/** The replication offset a server reports (the primary's own, or what a replica has applied). */
async function replicationOffset(port: number, field: string): Promise<number> {
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const info = await client.info('replication');
    return Number(new RegExp(`${field}:(\\d+)`).exec(info)?.[1] ?? NaN);
  } finally {
    client.disconnect();
  }
}

describe('Redis failover through Sentinel under load', () => {
  // 480 s: about 20 s on an idle two-core machine; on the loaded CI machine the processes' start
  // alone may take minutes (their readiness wait is 180 s), and each phase after it several
  // times its idle time.
  it('follows the new primary without a restart; only work written to the primary and not replicated is lost', async () => {
    const service = await startServiceProcesses(env, dir, 'sentinel');
    let stores: (() => Promise<void>) | undefined;
    try {
      // Room for every call at once: a call whose end was lost in the failover keeps its dial slot
      // until the lost-call sweep learns its end (docs/redis.md), and with the default 5 slots
      // those would park later calls of the firm meanwhile — a consequence of the loss, not a
      // second one, so kept out of this count.
      const firm = await firmWithAgent(service.baseUrl, env.ADMIN_API_KEY!, { max_concurrent_calls: 1000 });
      const requests: Request[] = [];
      const running: Promise<void>[] = [];
      let killAt: number | undefined;
      let stopSendingAt = Infinity;
      const giveUp = () => Date.now() > stopSendingAt + 30_000;
      let primaryOffsetAtKill = NaN;
      let replicaOffsetAtKill = NaN;
      let holdAt: number | undefined;

      for (let i = 0; ; i++) {
        const now = Date.now();
        if (now > stopSendingAt) break;
        const request: Request = { key: `failover-${i}-${rand()}`, index: i, sentAt: now, answers: [] };
        requests.push(request);
        running.push(untilAcknowledged(firm, request, giveUp));
        const acked = requests.filter((r) => r.ackAt !== undefined);
        if (holdAt === undefined && acked.length >= CALLS_BEFORE_HOLD) {
          // From here the primary's writes no longer reach the replica: a replication lag,
          // stretched from the usual milliseconds so that its window holds countable work.
          holdAt = Date.now();
          group.holdReplication();
        }
        const ackedInHold = acked.filter((r) => holdAt !== undefined && r.sentAt > holdAt).length;
        if (
          killAt === undefined &&
          holdAt !== undefined &&
          (ackedInHold >= ACKS_IN_HOLD || now - holdAt > 3000)
        ) {
          // The offsets a moment before the primary dies, then SIGKILL: no shutdown, no last sync.
          primaryOffsetAtKill = await replicationOffset(group.primary.port, 'master_repl_offset');
          replicaOffsetAtKill = await replicationOffset(group.replica.port, 'slave_repl_offset');
          killAt = Date.now();
          group.killPrimary();
          stopSendingAt = killAt + LOAD_AFTER_KILL_MS;
        }
        await sleep(1000 / RATE_PER_S);
      }
      await Promise.all(running);
      expect(killAt).toBeDefined();
      expect((await group.primary.launched.exited).signal).toBe('SIGKILL');

      // Sentinel promoted the replica, and the service found it on its own (web and worker never restarted).
      await eventually(async () => expect(await group.primaryPort()).toBe(group.replica.port), 30_000, 100);
      const promotedAt = await replicationOffset(group.replica.port, 'second_repl_offset');
      expect(service.web.launched.running() && service.worker.launched.running()).toBe(true);

      const acknowledged = requests.filter((r) => r.ackAt !== undefined);
      const afterKill = acknowledged.filter((r) => r.sentAt > killAt!);
      // Requests sent after the kill were acknowledged once the failover was done: the web followed.
      expect(afterKill.length).toBeGreaterThan(0);
      const firstAckAfterKill = Math.min(...afterKill.map((r) => r.ackAt!));

      // Let the call pipeline drain on the new primary (the other queues hold repeatable jobs,
      // always delayed): no job waiting, running or due — the workers resumed on their own — and
      // the webhook outbox empty. The simulator's webhooks that reached the web while Redis was
      // away were kept there (acknowledged, durable), and so were later ones until it emptied: a
      // worker moves them into their queue within DRAIN_INTERVAL_MS, so the queues alone can be
      // empty for a moment while a call's next event still waits in the outbox. Hence the
      // outbox looked at before and after the queues, and the whole found drained twice, the
      // second time after a drain interval more.
      const settings = redisSettings(loadConfig(env));
      const connection = createRedis(settings, 'worker');
      const queues = createQueues(connection, redisKeys(loadConfig(env)), () => {});
      const outbox = mongo.db.collection(COLLECTIONS.webhookOutbox);
      const drained = async (): Promise<void> => {
        expect(await outbox.countDocuments(), 'webhook outbox').toBe(0);
        for (const name of ['calls', 'simulator', 'call-events', 'call-effects'] as const) {
          const queue = queues[name];
          const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
          expect(
            Object.values(counts).reduce((a, b) => a + b, 0),
            `${name} ${JSON.stringify(counts)}`,
          ).toBe(0);
        }
        expect(await outbox.countDocuments(), 'webhook outbox').toBe(0);
      };
      const closeStores = async (): Promise<void> => {
        await closeQueues(queues);
        connection.disconnect();
      };
      stores = closeStores;
      await eventually(drained, 90_000, 250);
      await sleep(DRAIN_INTERVAL_MS + 500);
      await eventually(drained, 90_000, 250);
      // A call whose place-call job, simulator step or call event was lost with the primary is the
      // lost-call sweep's: its place-call job added again (every request here has a key: the call
      // is placed), or the simulator asked how it stands (it plays on a call that lost its step,
      // and its end is applied from its record). None is left unfinished once the sweep has been by.
      const unfinished = async (): Promise<string[]> =>
        (
          await mongo.db
            .collection<CallDoc>(COLLECTIONS.calls)
            .find({ firm: firm.slug, finished: false }, { projection: { _id: 1 } })
            .toArray()
        ).map((c) => c._id);
      // Every job scheduler has a next run pending on the new primary: a next run added in the held
      // window was lost with it, and the worker adds it again (workers/job-schedules.ts); without
      // that the lost-call sweep never ran again and the calls below stayed unfinished.
      await eventually(
        async () => {
          for (const definition of Object.values(JOBS) as JobDefinition<unknown>[]) {
            if (definition.everyMs === undefined) continue;
            const queue = queues[definition.queue];
            const next = (await queue.getJobScheduler(definition.name))?.next;
            const state =
              next == null ? 'no scheduler' : await queue.getJobState(`repeat:${definition.name}:${next}`);
            expect(
              ['delayed', 'waiting', 'prioritized', 'active'],
              `${definition.name}'s next run`,
            ).toContain(state);
          }
        },
        30_000,
        250,
      );
      // A call left unfinished, or lost after the kill, is named in the failure itself with
      // everything known of it: its answers, its record, the simulator's, and where its jobs are
      // on the new primary.
      const describeLoss = async (r: Request): Promise<Record<string, unknown>> => {
        const call = await mongo.db.collection<CallDoc>(COLLECTIONS.calls).findOne({ _id: r.callId! });
        const played = await simulatorCalls(mongo.db).findOne(
          { 'metadata.call_id': r.callId! },
          { projection: { call_status: 1, delivered: 1 } },
        );
        return {
          call_id: r.callId,
          sent_after_kill_ms: r.sentAt - killAt!,
          answers: r.answers,
          acknowledged_after_kill_ms: r.ackAt! - killAt!,
          status: call?.status,
          dial: call?.dial,
          updated_after_kill_ms: call === null ? null : call.updated_at.getTime() - killAt!,
          simulator: played,
          jobs: {
            place_call: await queues.calls.getJobState(
              JOBS.placeCall.id!({ callId: r.callId!, firm: firm.slug }),
            ),
            simulator_step: await queues.simulator.getJobState(jobId('sim', r.callId!)),
          },
          outbox: await outbox.countDocuments(),
        };
      };
      await eventually(async () => expect(await unfinished()).toEqual([]), 60_000, 250).catch(async (err) => {
        const left = await unfinished();
        expect(
          await Promise.all(left.map((id) => describeLoss(requests.find((r) => r.callId === id)!))),
        ).toEqual([]);
        throw err;
      });
      await eventually(drained, 90_000, 250);
      await sleep(DRAIN_INTERVAL_MS + 500);
      await eventually(drained, 90_000, 250);

      const outcomes = await callOutcomes(
        mongo.db,
        acknowledged.map((r) => r.callId!),
      );
      const callRecords = await mongo.db.collection(COLLECTIONS.calls).countDocuments({ firm: firm.slug });
      const lost = acknowledged.filter((r) => outcomes.get(r.callId!)!.leads === 0);
      const doubled = acknowledged.filter((r) => outcomes.get(r.callId!)!.leads > 1);
      const row = {
        sent: requests.length,
        acknowledged: acknowledged.length,
        retried_after_503: requests.filter((r) => r.answers.some((s) => s !== 200)).length,
        call_records: callRecords,
        leads: [...outcomes.values()].reduce((n, o) => n + o.leads, 0),
        lost: lost.length,
        lost_by_status: Object.fromEntries(
          ['registered', 'ongoing', 'ended'].map((status) => [
            status,
            lost.filter((r) => outcomes.get(r.callId!)!.status === status).length,
          ]),
        ),
        doubled: doubled.length,
        dial_attempts_over_1: [...outcomes.values()].filter((o) => o.dialAttempts > 1).length,
        // What the lost-call sweep added again (it logs each pass that added any).
        ...sweptJobs(await service.worker.output()),
        // Job schedulers whose next run was lost and which the worker scheduled again.
        schedulers_rescheduled:
          (await service.worker.output()).split('a scheduler had no next run').length - 1,
        // Webhooks the web kept in the MongoDB outbox (Redis away, or older ones still there).
        kept_in_outbox: (await service.web.output()).split('delivery kept in the MongoDB outbox').length - 1,
      };
      console.log(`invariants ${JSON.stringify(row)}`);
      console.log(
        `failover: first acknowledgement after the kill ${firstAckAfterKill - killAt!} ms after it; ` +
          `replication held ${killAt! - holdAt!} ms before the kill; primary offset just before the kill ` +
          `${primaryOffsetAtKill}, replica's ${replicaOffsetAtKill}, promoted at ${promotedAt - 1} ` +
          `(${primaryOffsetAtKill - (promotedAt - 1)} bytes written to the primary never reached the replica)`,
      );
      for (const r of lost) {
        const o = outcomes.get(r.callId!)!;
        console.log(
          `lost ${r.callId}: status ${o.status}; acknowledged ${r.ackAt! - holdAt!} ms and last written ` +
            `${o.updatedAt === null ? '?' : o.updatedAt.getTime() - holdAt!} ms after the hold began ` +
            `(the kill: ${killAt! - holdAt!} ms)`,
        );
      }

      // Every request was acknowledged in the end (a 503 during the failover, then a 200 on retry).
      expect(acknowledged).toHaveLength(requests.length);
      // One call record per Idempotency-Key, one lead at most per call: nothing doubled.
      expect(callRecords).toBe(acknowledged.length);
      expect(doubled).toEqual([]);
      // The held link did open a window: writes the primary acknowledged never reached the replica.
      // Work acknowledged in it may be gone (the call_analyzed of an ended call, or a job of its
      // effects: they never run; the sweep, checked above, takes up what an unfinished call lost),
      // unless its calls finished on the old primary first: whether any is lost is the timing's,
      // and both outcomes are checked below.
      expect(primaryOffsetAtKill - (promotedAt - 1)).toBeGreaterThan(0);
      // Only calls requested before the kill lost work (a job of theirs was on the dead primary
      // only; its answer may arrive just after the kill). The lines printed show each one's last
      // write inside the held window, or after the kill when a worker finished a job it had
      // taken from the dead primary.
      const lostAfterKill = await Promise.all(lost.filter((r) => r.sentAt >= killAt!).map(describeLoss));
      expect(lostAfterKill).toEqual([]);
      // Everything acknowledged after the kill reached its lead: the workers follow the new primary.
      expect(afterKill.filter((r) => outcomes.get(r.callId!)!.leads !== 1)).toEqual([]);
    } catch (err) {
      // What the processes said is the first thing to read when the failover was not followed.
      for (const child of [service.web, service.worker]) console.log((await child.output()).slice(-4000));
      throw err;
    } finally {
      await stores?.();
      await service.stop();
    }
  }, 480_000);
});
