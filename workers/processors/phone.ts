import type { MissedCallbackJob } from '../../jobs/phone.js';
import { callBackMissedCall } from '../../core/domain/phone/missed-calls.js';
import { pruneExpiredRingCentralStates } from '../../core/domain/phone/ringcentral-connection.js';
import { maintainRingCentralSubscriptions as maintain } from '../../core/domain/phone/ringcentral-subscription.js';
import type { JobProcessor } from '../runner.js';

/** Decides and places one missed call's callback (core/domain/phone/missed-calls.ts). */
export const missedCallback: JobProcessor<MissedCallbackJob> = async (job, { services }) => ({
  outcome: await callBackMissedCall(services, job.data),
});

/** Renews or re-creates each connected firm's RingCentral subscription. */
export const maintainRingCentralSubscriptions: JobProcessor<Record<string, never>> = async (
  _job,
  { services },
) => maintain(services);

/** Deletes RingCentral connect states that expired unused (hourly). */
export const pruneRingCentralOAuthStates: JobProcessor<Record<string, never>> = async (
  _job,
  { services },
) => ({
  deleted: await pruneExpiredRingCentralStates(services.mongo.db),
});
