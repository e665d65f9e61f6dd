import { QUEUE } from '../../jobs/queues.js';
import type { CallEventJob } from '../../jobs/calls.js';
import { applyCallEvent } from '../../core/domain/calls/call-events.js';
import { withCallLock } from '../../core/domain/calls/call-lock.js';
import type { QueueProcessor } from '../processor.js';

/**
 * Applies one voice-provider webhook event to our call record (job id = firm + event + call id),
 * one writer of the call at a time, so status only moves forward on every store.
 */
export const callEventsProcessor: QueueProcessor = {
  queue: QUEUE.callEvents,
  async process(job, { services }) {
    const data = job.data as CallEventJob;
    const ours = (data.call.metadata as { call_id?: unknown } | undefined)?.call_id;
    const key = typeof ours === 'string' && ours !== '' ? ours : `provider:${data.call.call_id}`;
    const { call, advanced } = await withCallLock(services, data.firm, key, () =>
      applyCallEvent(services.mongo.db, data),
    );
    return { call_id: call._id, status: call.status, advanced };
  },
};
