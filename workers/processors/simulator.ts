import { DelayedError } from 'bullmq';
import type { SimulatorStepJob } from '../../jobs/simulator.js';
import { advanceSimulatedCall } from '../../core/integrations/voice/simulator-engine.js';
import type { SimulatedCall } from '../../core/integrations/voice/simulator.js';
import type { JobProcessor } from '../runner.js';

/**
 * The built-in voice simulator: plays a placed call on and sends its webhooks. The job carries the
 * call as the last step left it, and a first run starts from that; a run after a failure or a
 * stall (whose step may have been written without the job knowing) reads the call instead.
 */
export const simulatorStep: JobProcessor<SimulatorStepJob> = async (job, { services, token }) => {
  const { callId, providerCallId } = job.data;
  const firstRun = job.attemptsMade === 0 && (job.stalledCounter ?? 0) === 0;
  // Carried by the simulator's place and this job only; the step checks it is the call's.
  const carried = firstRun ? (job.data.call as SimulatedCall | undefined) : undefined;
  const step = await advanceSimulatedCall(
    { db: services.mongo.db, config: services.config },
    providerCallId,
    carried,
  );
  if (step.waitUntil !== undefined) {
    // Come back when the simulated caller hangs up, without holding a worker slot meanwhile, with
    // the call as answered.
    await job.updateData({ callId, providerCallId, call: step.call });
    await job.moveToDelayed(step.waitUntil, token);
    throw new DelayedError();
  }
  return { status: step.status };
};
