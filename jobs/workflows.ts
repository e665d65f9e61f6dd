import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';
import { RETRY_AFTER, capped } from './backoff.js';

// Workflows (docs/workflows.md#runs): a domain event's fan-out (jobs/webhooks.ts) starts the runs of
// the firm's active workflows it matches (and ends the `wait_for` steps waiting on it); each step of a run is a job
// of its own, keyed by the step (run + node + visit), so a retried step adds nothing new; a `wait`
// is the next step's job added with a delay; a `wait_for` step's timeout is a delayed job too.
// Deleting a workflow adds one job that cancels its runs under way.

/** One step of a run (job id = the step id: run + node + visit). */
export interface WorkflowStepJob {
  firm: string;
  runId: string;
  stepId: string;
}

/** A deleted workflow's runs under way, to be cancelled (job id = the workflow: ids are never reused). */
export interface WorkflowCancelRunsJob {
  firm: string;
  workflowId: string;
}

export const workflowJobs = {
  workflowStep: defineJob<WorkflowStepJob>({
    queue: QUEUE.workflows,
    name: 'workflow-step',
    id: (job) => jobId('wfs', job.stepId),
    // As call effects: about an hour of retries before a step's action is `failed`, none sooner
    // than a 429's Retry-After (Clio, Slack).
    options: { attempts: 12, backoff: { type: RETRY_AFTER, delay: 2000 } },
  }),
  workflowWaitTimeout: defineJob<WorkflowStepJob>({
    queue: QUEUE.workflows,
    name: 'workflow-wait-timeout',
    id: (job) => jobId('wfto', job.stepId),
    // Its failures are the service's own (MongoDB, Redis down): retried within seconds of their
    // end for about an hour. With the default 8 attempts (about 2 minutes) a longer outage at
    // its time failed it for good, and the run waited for its event, `running`, for ever.
    options: capped(),
  }),
  workflowCancelRuns: defineJob<WorkflowCancelRunsJob>({
    queue: QUEUE.workflows,
    name: 'workflow-cancel-runs',
    id: (job) => jobId('wfcancel', job.workflowId),
    // Its failures are the service's own (MongoDB, Redis down): retried within seconds of their
    // end; a run cancelled already is not read again.
    options: capped(),
  }),
};
