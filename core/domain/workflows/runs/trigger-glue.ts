import type { Services } from '../../../wiring/services.js';
import { enqueue } from '../../../../jobs/define.js';
import { JOBS } from '../../../../jobs/table.js';
import { eventsCollection } from '../../events/record-event.js';
import { startWorkflowRuns } from './start-runs.js';

// The one place a recorded event reaches the workflows: its trigger job (job id = the event id),
// whose processor calls startWorkflowRuns (start-runs.ts). Where events also go out to webhook
// endpoints, their fan-out job calls startWorkflowRuns itself and this glue goes away.

/** Makes sure the event's workflow trigger runs (a no-op while BullMQ knows the job). */
export async function ensureWorkflowTrigger(
  services: Services,
  event: { firm: string; eventId: string },
): Promise<void> {
  await enqueue(services.queues, JOBS.workflowTrigger, event);
}

/** The workflowTrigger job: the event, read by id, starts its runs. */
export async function triggerWorkflows(
  services: Services,
  job: { firm: string; eventId: string },
): Promise<{ runs: number } | { outcome: 'missing' }> {
  const event = await eventsCollection(services).findOne({ _id: job.eventId });
  if (event === null || event.firm !== job.firm) return { outcome: 'missing' };
  return { runs: (await startWorkflowRuns(services, event)).length };
}
