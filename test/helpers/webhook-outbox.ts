import type { Job } from 'bullmq';
import { expect } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { Stack } from './stack.js';

/**
 * Asserts that no delivery waits in the webhook outbox: one there is pending work, as a job in a
 * queue is (an add that took longer than ENQUEUE_TIMEOUT_MS on a busy machine sends it there,
 * and a worker's drain moves it on within a second or so). For the `eventually` of a "drained" wait.
 */
export async function expectOutboxEmpty(stack: Stack): Promise<void> {
  const outbox = stack.services.mongo.db.collection(COLLECTIONS.webhookOutbox);
  expect(await outbox.countDocuments({}), 'deliveries in the webhook outbox').toBe(0);
}

/**
 * The call-events data of the given calls' deliveries, wherever each was made durable: its job in
 * the queue (waiting, delayed, active or, with `completed`, done), or its entry in the webhook
 * outbox, where a delivery goes when its add takes longer than ENQUEUE_TIMEOUT_MS (a loaded
 * machine) and, the web's outbox gate then closed, the stack's later deliveries too until a
 * worker's drain empties it. `jobs`: the queued ones; `kept`: the outbox's, with their payloads
 * and their job ids (`delivery`); `byCall`: each call's data, from either.
 */
export async function deliveredCallEvents(
  stack: Stack,
  callIds: string[],
  options: { completed?: boolean } = {},
): Promise<{
  jobs: Job[];
  kept: Array<{ payload: string; data: any; delivery?: string }>;
  byCall: Map<string, any>;
}> {
  const wanted = new Set(callIds);
  const states = ['waiting', 'delayed', 'active', ...(options.completed === true ? ['completed'] : [])];
  const jobs = (await stack.services.queues['call-events'].getJobs(states as never)).filter((j) =>
    wanted.has(j.data.call?.call_id),
  );
  const kept = (
    await stack.services.mongo.db
      .collection<{ payload: string; delivery?: string }>(COLLECTIONS.webhookOutbox)
      .find({ job: 'callEvent' })
      .toArray()
  )
    .map((entry) => ({ payload: entry.payload, data: JSON.parse(entry.payload), delivery: entry.delivery }))
    .filter((entry) => wanted.has(entry.data.call?.call_id));
  const byCall = new Map<string, any>();
  for (const entry of kept) byCall.set(entry.data.call.call_id, entry.data);
  for (const job of jobs) byCall.set(job.data.call.call_id, job.data);
  return { jobs, kept, byCall };
}
