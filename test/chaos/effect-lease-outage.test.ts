// Found by the chaos run: a Slack message posted twice with no worker killed. Redis stopped while
// a worker (A) was posting a call's team_chat message; its job lost its BullMQ lock, and when
// Redis was back another worker (B) took the job as stalled, found the effect `running` (a Slack
// message cannot be asked about) and posted again, while A was still retrying the known outcome
// into the record (its write needs the call's lock, which is in Redis). A running effect now
// holds a lease, renewed in MongoDB while the effect and its outcome write run: B waits for it;
// and the answer A read is stored (in MongoDB, before the record that needs the lock): B records it.
// Here Redis (a private one) is stopped and started; A's own connection to it goes through a
// relay that stays cut after the restart, as A's retry pause outlasts the restart in the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import { leaseIdOf, type EffectLeaseDoc, type EffectSubject } from '../../core/platform/db/effect-records.js';
import { withRecordLock } from '../../core/platform/redis-mutex.js';
import { createRedis, type RedisClient } from '../../core/platform/redis.js';
import { eventually } from '../helpers/eventually.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { freshMongoUri, rand, startStack, type Stack } from '../helpers/stack.js';
import { callSubject } from '../../core/domain/calls/call-lock.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { runningLeftByDeadAttempt } from '../helpers/effect-records.js';

/** The lease here (30 s by default), renewed every third of it, and its clock margin (5 s). */
const LEASE_MS = 1000;
const MARGIN_MS = 500;

let redis: PrivateRedis;
let relay: TcpRelay;
let mongo: Mongo;
/** Worker A's connection (through the relay) and worker B's (direct). */
let redisA: RedisClient;
let redisB: RedisClient;
/** The service's own wiring of a call's effects (EFFECT_LEASE_MS). */
let stack: Stack;

/** A worker's connection: it waits for Redis through an outage rather than failing. */
const client = (url: string): RedisClient => createRedis({ url }, 'worker');

beforeAll(async () => {
  redis = await startPrivateRedis();
  relay = await startTcpRelay(new URL(redis.url));
  redisA = client(relay.via(redis.url));
  redisB = client(redis.url);
  mongo = createMongo(freshMongoUri());
  stack = await startStack({ env: { EFFECT_LEASE_MS: '3000', EFFECT_LEASE_CLOCK_MARGIN_MS: '0' } });
});
afterAll(async () => {
  await stack?.stop();
  redisA?.disconnect();
  redisB?.disconnect();
  await relay?.close();
  await mongo?.db.dropDatabase().catch(() => {});
  await mongo?.close().catch(() => {});
  await redis?.remove();
});

const subjects = () => mongo.db.collection<{ _id: string }>('calls');
const leases = () => mongo.db.collection<EffectLeaseDoc>('effect_leases');

/** A call as one worker sees it: its record lock over that worker's Redis connection. */
const subjectOver = (conn: RedisClient, id: string): EffectSubject => ({
  collection: subjects() as unknown as EffectSubject['collection'],
  id,
  exclusive: (write) => withRecordLock(conn, `lock:${id}`, write, { ttlMs: 30_000 }),
  lease: { collection: leases(), ms: LEASE_MS, clockMarginMs: MARGIN_MS },
});

async function newCall(): Promise<string> {
  const id = `call_${rand(4)}`;
  await subjects().insertOne({ _id: id });
  return id;
}

const recordOf = async (id: string) =>
  (
    (await subjects().findOne({ _id: id })) as unknown as {
      effects?: Record<string, Record<string, unknown>>;
    }
  ).effects?.team_chat;

const effect = { path: 'effects.team_chat' };

describe('an effect under way in a worker that lost Redis', () => {
  it('is not repeated by another worker while the first still records its outcome; the other finds it done', async () => {
    const id = await newCall();
    let posted = 0;
    let markedAt = 0;
    // Worker A posts, and then Redis goes away: its outcome cannot take the call's lock.
    const first = runEffect(subjectOver(redisA, id), effect, { lastAttempt: false }, async () => {
      markedAt = Date.now();
      posted++;
      await relay.close();
      await redis.stop();
      return { state: 'done', result: { channel: 'slack' } };
    });
    let firstDone = false;
    void first.then(
      () => (firstDone = true),
      () => (firstDone = true),
    );
    await eventually(async () => expect(posted).toBe(1), 30_000, 20);
    // Long enough that the mark's lease alone would have ended: only renewals keep it.
    await eventually(
      async () => expect(Date.now()).toBeGreaterThan(markedAt + LEASE_MS + MARGIN_MS),
      30_000,
      100,
    );
    await redis.start();
    expect(firstDone).toBe(false);
    expect(await recordOf(id)).toMatchObject({ state: 'running', attempts: 1 });

    // Worker B takes the job over: the effect is A's, under a live lease, and A stored its answer
    // before it needed Redis. B records that answer, posting nothing.
    await expect(
      runEffect(subjectOver(redisB, id), effect, { lastAttempt: false }, async () => {
        posted++;
        return { state: 'done', result: { channel: 'slack' } };
      }),
    ).resolves.toMatchObject({ state: 'done', attempts: 1, result: { channel: 'slack' } });
    expect(posted).toBe(1);
    // The lease was renewed past its mark's end while A had no Redis.
    const renewal = await leases().findOne({ _id: leaseIdOf(subjectOver(redisB, id), effect.path) });
    expect(renewal?.until.getTime()).toBeGreaterThan(markedAt + LEASE_MS);

    // A reaches Redis again: its outcome lands, and its lease ends with it.
    relay = await startTcpRelay(new URL(redis.url), relay.port);
    expect(await first).toMatchObject({ state: 'done', attempts: 1 });
    expect(await recordOf(id)).toMatchObject({ state: 'done', lease_token: null, lease_until: null });
    expect(await leases().findOne({ _id: leaseIdOf(subjectOver(redisB, id), effect.path) })).toBeNull();

    // B's job, run again, finds the message posted.
    const again = await runEffect(subjectOver(redisB, id), effect, { lastAttempt: false }, async () => {
      posted++;
      return { state: 'done', result: { channel: 'slack' } };
    });
    expect(again.state).toBe('done');
    expect(posted).toBe(1);
  });

  it('a lease whose holder died lets the next attempt repeat the effect at once', async () => {
    const id = await newCall();
    // As a worker SIGKILLed mid-post leaves it: running, its lease long over.
    await subjects().updateOne(
      { _id: id },
      { $set: { 'effects.team_chat': runningLeftByDeadAttempt(LEASE_MS) } },
    );
    let posted = 0;
    const record = await runEffect(subjectOver(redisB, id), effect, { lastAttempt: false }, async () => {
      posted++;
      return { state: 'done', result: { channel: 'slack' } };
    });
    expect(record).toMatchObject({ state: 'done', attempts: 2 });
    expect(posted).toBe(1);
  });

  it('an attempt that failed ends its lease: the next one need not wait for it', async () => {
    const id = await newCall();
    let posted = 0;
    await expect(
      runEffect(subjectOver(redisB, id), effect, { lastAttempt: false }, async () => {
        posted++;
        throw new Error('socket hang up');
      }),
    ).rejects.toThrow('socket hang up');
    expect(await recordOf(id)).toMatchObject({ state: 'running', lease_token: null, lease_until: null });
    const record = await runEffect(subjectOver(redisB, id), effect, { lastAttempt: false }, async () => {
      posted++;
      return { state: 'done', result: { channel: 'slack' } };
    });
    expect(record).toMatchObject({ state: 'done', attempts: 2 });
    expect(posted).toBe(2);
  });

  it("a call's effects hold the lease: while one runs, another attempt of it waits", async () => {
    const call = { _id: `call_${rand(4)}`, firm: `firm-${rand(3)}` };
    await stack.services.mongo.db.collection<{ _id: string }>(COLLECTIONS.calls).insertOne(call);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let sent = 0;
    const first = runEffect(
      callSubject(stack.services, call),
      { path: 'effects.email' },
      { lastAttempt: false },
      async () => {
        sent++;
        await held;
        return { state: 'done', result: { message_id: '<m@test>' } };
      },
    );
    await eventually(async () => expect(sent).toBe(1), 10_000, 20);
    const busy = runEffect(
      callSubject(stack.services, call),
      { path: 'effects.email' },
      { lastAttempt: false },
      async () => {
        sent++;
        return { state: 'done', result: { message_id: '<m2@test>' } };
      },
    );
    await expect(busy).rejects.toMatchObject({ name: 'EffectBusyError' });
    // Until the lease's end as marked (EFFECT_LEASE_MS, no margin here) or later.
    const until = ((await busy.catch((err: unknown) => err)) as { until: number }).until;
    const marked = (await stack.services.mongo.db
      .collection(COLLECTIONS.calls)
      .findOne({ _id: call._id as never })) as unknown as {
      effects: { email: { lease_until: Date } };
    };
    expect(until).toBeGreaterThanOrEqual(marked.effects.email.lease_until.getTime());
    release();
    expect(await first).toMatchObject({ state: 'done', attempts: 1 });
    expect(sent).toBe(1);
  });
});
