// SIGTERM on the real worker process (workers/main.ts) at a busy moment: the webhook outbox's
// drain is waiting on a booking's earlier delivery (up to 15 s a delivery) and three Slack
// posts are on their way to a slow Slack. The whole stop must fit the process's deadline
// (SHUTDOWN_TIMEOUT_MS, counted from the signal): the drain's wait must not push the grace
// period past it, the posts in flight may finish and be recorded, and the process exits 0
// having handed back whatever was left. A process that outlived its deadline exited 1 with
// nothing handed back, and every post in flight was posted again by the next worker.
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import type { OutboxEntry } from '../../core/domain/deliveries/delivery-outbox.js';
import type { BookingEventJob } from '../../jobs/bookings.js';
import type { Workers } from '../../workers/runner.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import { callForProvider, storedCall, postSigned, retellCallAnalyzed } from '../webhooks/support.js';

const SECRET = 'whsec_worker_shutdown_deadline';
let slack: FakeSlack;
let stack: Stack;
let child: ChildProcess | undefined;
let workers: Workers | undefined;

beforeAll(async () => {
  slack = await startFakeSlack();
  stack = await startStack({ env: { JOB_LOCK_MS: '2000' } });
});
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  slack.release();
  await workers?.stop();
  workers = undefined;
});
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
});

/** The child's log lines (pino JSON on stdout or stderr), parsed as they come. */
function logOf(process: ChildProcess): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const stream of [process.stdout, process.stderr]) {
    let partial = '';
    stream?.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        if (!line.startsWith('{')) continue;
        try {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // not a log line
        }
      }
    });
  }
  return lines;
}

/** Deliveries of one booking kept in the outbox while Redis was down: each waits for the one before. */
function keptDeliveries(firm: string, count: number): OutboxEntry[] {
  const uid = `bk_${rand(6)}`;
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const data: BookingEventJob = {
      firm,
      trigger: i === 0 ? 'BOOKING_CREATED' : 'BOOKING_RESCHEDULED',
      uid,
      title: 'Consultation',
      start_at: now + 86_400_000 + i * 60_000,
      attendees: [{ email: 'lead@example.test' }],
      event_at: now - 60_000 + i,
      received_at: now - 60_000 + i,
      delivery: `d${i}${rand(8)}`,
    };
    const payload = JSON.stringify(data);
    return {
      _id: `${String(now - 60_000).padStart(15, '0')}.${String(i).padStart(9, '0')}.test`,
      job: 'bookingEvent',
      firm,
      keys: [`booking|${uid}`],
      payload,
      bytes: payload.length,
      stored_at: new Date(now - 60_000),
    };
  });
}

describe('SIGTERM while the outbox drain waits and Slack posts are in flight', () => {
  it('exits 0 within its deadline, each post in flight recorded once, nothing posted twice', async () => {
    const channel = slack.webhookUrl();
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET, slack_webhook_url: channel });
    slack.hold();
    // No process takes bookings here: a kept delivery's job stays waiting, so the drain waits
    // (up to 15 s) before it moves the next delivery of the same booking.
    child = startWorkerProcess({
      ...stack.env,
      SHUTDOWN_TIMEOUT_MS: '8000',
      WORKER_QUEUES: 'call-events,call-effects',
    });
    const log = logOf(child);

    const callIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = retellCallAnalyzed({ providerCallId: `call_${rand(8)}` });
      expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
      callIds.push((await callForProvider(stack, firm.slug, body.call.call_id))._id);
    }
    // Three posts have reached Slack and wait for its answer.
    await eventually(async () => expect(slack.held()).toBe(3), 60_000, 50);

    const outbox = stack.services.mongo.db.collection<OutboxEntry>(COLLECTIONS.webhookOutbox);
    const kept = keptDeliveries(firm.slug, 5);
    await outbox.insertMany(kept);
    // The drain has moved the first delivery and waits for its job before the second.
    await eventually(async () => expect(await outbox.countDocuments({})).toBe(4), 30_000, 50);

    child.kill('SIGTERM');
    const exit = exitOf(child);
    // Slack answers once the worker has stopped starting effects (or once it has gone).
    await Promise.race([
      exit,
      eventually(async () => expect(log.some((l) => l.msg === 'stop: grace over')).toBe(true), 60_000, 20),
    ]);
    slack.release();
    const exited = await exit;
    // Its jobs ended or were handed back with their calls' locks let go of: none is left for the
    // next worker to wait out (CALL_LOCK_MS, 30 s). A job that had its effects recorded and its
    // last writes to make was handed back while it made them, its lock then left behind.
    const callLocks = callIds.map((id) => redisKeys(stack.config).callLock(firm.slug, id));
    expect(await stack.services.redis.exists(...callLocks)).toBe(0);

    // Another worker finishes whatever was handed back (or, with the process gone, stalled).
    workers = startInProcessWorkers(stack, ['call-events', 'call-effects']);
    for (const callId of callIds) {
      await eventually(
        async () => expect((await storedCall(stack, callId))?.effects?.team_chat?.state).toBe('done'),
        60_000,
      );
    }
    await eventually(async () => {
      const counts = await stack.services.queues['call-effects'].getJobCounts('waiting', 'active', 'delayed');
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
    }, 60_000);

    // 0: the process's own word that it stopped before its deadline (it exits 1 past it).
    expect({ exit: exited, slackPosts: slack.messages(channel).length }).toEqual({
      exit: { code: 0, signal: null },
      slackPosts: callIds.length,
    });
    // The kept deliveries are all still there: in the outbox or as jobs.
    const left = await outbox.countDocuments({});
    const moved = await stack.services.queues.bookings.getJobCounts('waiting');
    expect(left + moved.waiting!).toBe(kept.length);
  }, 180_000);
});
