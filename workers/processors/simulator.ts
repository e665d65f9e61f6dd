import { DelayedError } from 'bullmq';
import type { SimulatorStepJob } from '../../jobs/simulator.js';
import { advanceSimulatedCall } from '../../core/integrations/voice/simulator-engine.js';
import type { JobProcessor } from '../runner.js';

/** The built-in voice simulator: plays a placed call out and sends its webhooks. */
export const simulatorStep: JobProcessor<SimulatorStepJob> = async (job, { services, token }) => {
  const result = await advanceSimulatedCall(
    { db: services.mongo.db, config: services.config },
    job.data.providerCallId,
  );
  if (result.waitUntil !== undefined) {
    // Come back when the simulated caller hangs up, without holding a worker slot meanwhile.
    await job.moveToDelayed(result.waitUntil, token);
    throw new DelayedError();
  }
  return result;
};
