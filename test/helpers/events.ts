import type { Worker } from 'bullmq';
import { expect } from 'vitest';
import { JOBS, type JobKey } from '../../jobs/table.js';
import { processors } from '../../workers/processors/index.js';
import type { JobProcessor } from '../../workers/runner.js';
import { eventBodyProblems } from '../../api/schemas/events.js';
import type { DomainEvent } from '../../core/domain/events/event-types.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { Stack } from './stack.js';
import { eventually } from './eventually.js';
import { finishedHere } from '../../core/domain/calls/call-finished.js';

// The domain events a test's flows recorded (docs/events.md), read from the events collection,
// each checked against its type's published schema as a receiver would get its body.

/** The events collection (read and, to stand for a step that died before its event, written). */
export const eventDocs = (stack: Stack) =>
  stack.services.mongo.db.collection<DomainEvent>(COLLECTIONS.events);

export interface RecordedEvent {
  id: string;
  firm: string;
  type: string;
  subject: string;
  occurred_at: Date;
  data: Record<string, any>;
}

/**
 * A firm's events (of `subject`, when given) in the order they happened; every one's body
 * `{type, timestamp, data}` must conform to its type's schema.
 */
export async function eventsOf(stack: Stack, firm: string, subject?: string): Promise<RecordedEvent[]> {
  const docs: DomainEvent[] = await eventDocs(stack)
    .find(subject === undefined ? { firm } : { firm, subject })
    .toArray();
  const events = docs
    .map((doc) => ({
      id: doc._id,
      firm: doc.firm,
      type: doc.type,
      subject: doc.subject,
      occurred_at: doc.occurred_at,
      data: JSON.parse(doc.data_json) as Record<string, any>,
    }))
    .sort((a, b) => a.occurred_at.getTime() - b.occurred_at.getTime() || a.id.localeCompare(b.id));
  for (const event of events) {
    const body = { type: event.type, timestamp: event.occurred_at.toISOString(), data: event.data };
    expect(eventBodyProblems(body), `${event.type} ${event.id} against its schema`).toEqual([]);
  }
  return events;
}

/** The types of the events, in order. */
export const typesOf = (events: RecordedEvent[]): string[] => events.map((e) => e.type);

/**
 * Runs every completed job of `key` again with its own data, in this process: what a retry of a
 * step that had done its work does (a worker that died after the step, before BullMQ heard).
 * First waits until no job of `key` is waiting or running: BullMQ files a job as completed once
 * its processor has returned, a moment after the job's last write (its event) can be read.
 * The retry runs as in the worker taking over from the one that died: with no memory of having
 * finished a call's hook (core/domain/calls/call-finished.ts), which only a hook run to its end
 * leaves in a process.
 */
export async function rerunCompleted(stack: Stack, key: JobKey): Promise<number> {
  const def = JOBS[key];
  const queue = stack.services.queues[def.queue];
  await eventually(async () => {
    const unsettled = (await queue.getJobs(['active', 'waiting', 'prioritized'])).filter(
      (j) => j.name === def.name,
    );
    expect(
      unsettled.map((j) => j.id),
      `${def.name} jobs not yet completed`,
    ).toEqual([]);
  });
  const jobs = (await queue.getCompleted()).filter((j) => j.name === def.name);
  const processor = processors[key] as JobProcessor<unknown>;
  for (const job of jobs) {
    finishedHere.clear();
    await processor(job, {
      services: stack.services,
      worker: undefined as unknown as Worker,
      token: undefined,
      attempt: { lastAttempt: false },
    });
  }
  return jobs.length;
}
