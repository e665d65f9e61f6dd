import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';

/** Advances one simulated call (answer, hang up) and delivers its webhooks. */
export interface SimulatorStepJob {
  callId: string;
  providerCallId: string;
}

export const simulatorJobs = {
  simulatorStep: defineJob<SimulatorStepJob>({
    queue: QUEUE.simulator,
    name: 'simulator-step',
    id: (job) => jobId('sim', job.callId),
  }),
};
