import type { WorkflowCancelRunsJob, WorkflowStepJob } from '../../jobs/workflows.js';
import { resolveWaitFor, runWorkflowStep } from '../../core/domain/workflows/runs/steps.js';
import { cancelDeletedWorkflowRuns } from '../../core/domain/workflows/runs/cancel-runs.js';
import type { JobProcessor } from '../runner.js';

/** One step of a workflow run (job id = the step). */
export const workflowStep: JobProcessor<WorkflowStepJob> = async (job, { services, attempt }) => ({
  step: await runWorkflowStep(services, job.data, attempt),
});

/** A `wait_for` step's time ran out (unless its event came first). */
export const workflowWaitTimeout: JobProcessor<WorkflowStepJob> = async (job, { services }) => {
  await resolveWaitFor(services, job.data, 'timeout', null);
  return { resolved: true };
};

/** A deleted workflow's runs under way are cancelled, those parked in a wait included. */
export const workflowCancelRuns: JobProcessor<WorkflowCancelRunsJob> = async (job, { services }) => ({
  cancelled: await cancelDeletedWorkflowRuns(services, job.data),
});
