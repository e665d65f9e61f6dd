import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';

/** Advances one simulated call (answer, hang up) and delivers its webhooks. */
export interface SimulatorStepJob {
  callId: string;
  providerCallId: string;
  /**
   * The call as the last step left it (as placed, then as answered), in the simulator's own shape
   * (`SimulatedCall`, core/integrations/voice/simulator.ts: written by the simulator and its job
   * alone): the next step starts from it instead of reading it back. Absent in a job added before
   * it was carried.
   */
  call?: object;
}

export const simulatorJobs = {
  simulatorStep: defineJob<SimulatorStepJob>({
    queue: QUEUE.simulator,
    name: 'simulator-step',
    id: (job) => jobId('sim', job.callId),
  }),
};
