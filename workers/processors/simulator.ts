import { DelayedError } from 'bullmq';
import { QUEUE } from '../../jobs/queues.js';
import type { SimulatorStepJob } from '../../jobs/calls.js';
import { advanceSimulatedCall } from '../../core/integrations/voice/simulator-engine.js';
import type { QueueProcessor } from '../processor.js';

/** The built-in voice simulator: plays a placed call out and sends its webhooks. */
export const simulatorProcessor: QueueProcessor = {
  queue: QUEUE.simulator,
  async process(job, { services, token }) {
    const { providerCallId } = job.data as SimulatorStepJob;
    const result = await advanceSimulatedCall(
      { db: services.mongo.db, config: services.config },
      providerCallId,
    );
    if (result.waitUntil !== undefined) {
      // Come back when the simulated caller hangs up, without holding a worker slot meanwhile.
      await job.moveToDelayed(result.waitUntil, token);
      throw new DelayedError();
    }
    return result;
  },
};
