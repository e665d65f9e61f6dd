import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';

// A pause or cancel answers "no call is dialled from now on" (docs/campaigns.md#pause-resume-cancel).
// The call's job looks at its campaign right before the dial, but between that look and the
// provider's answer there is the dial gate and the provider's request: a pause answered in that gap
// would be followed by a dial. So each campaign call's dial attempt is registered before its look
// and unregistered once the dial is over (counted in calls_placed, or held, deferred, blocked), and
// the pause or cancel, once its state is written, waits for the attempts registered by then: any
// later attempt's look sees the new state. A member left by a worker that died mid-dial counts only
// until its deadline.

/** How long one dial attempt may take at the most (the provider's request is 30 s at most). */
export const DIAL_ATTEMPT_MAX_MS = 60_000;
/** How long a pause or cancel waits for the dials under way before it answers anyway. */
export const DIALS_SETTLE_WAIT_MS = 10_000;
const POLL_MS = 20;

/** Registers one campaign call's dial attempt (before the job looks at its campaign). */
export async function dialStarting(services: Services, campaignId: string, callId: string): Promise<void> {
  const key = redisKeys(services.config).campaignDialling(campaignId);
  const replies = await services.redis
    .multi()
    .zadd(key, Date.now() + DIAL_ATTEMPT_MAX_MS, callId)
    .pexpire(key, DIAL_ATTEMPT_MAX_MS)
    .exec();
  // A MULTI answers each command's error in its replies: an attempt not registered is not dialled.
  const failed =
    replies === null
      ? new Error('the dial registration was not applied')
      : replies.find(([err]) => err !== null)?.[0];
  if (failed) throw failed;
}

/** The attempt is over (dialled and counted, or not dialled). Best effort: the deadline ends it too. */
export async function dialOver(services: Services, campaignId: string, callId: string): Promise<void> {
  try {
    await services.redis.zrem(redisKeys(services.config).campaignDialling(campaignId), callId);
  } catch (err) {
    services.log.warn(
      { err, campaign_id: campaignId, call_id: callId },
      'could not unregister a dial attempt',
    );
  }
}

/**
 * Waits until none of the campaign's dial attempts is under way (each past its deadline counts as
 * over), at most DIALS_SETTLE_WAIT_MS; false when some still were then.
 */
export async function dialsSettled(services: Services, campaignId: string): Promise<boolean> {
  const key = redisKeys(services.config).campaignDialling(campaignId);
  const until = Date.now() + DIALS_SETTLE_WAIT_MS;
  for (;;) {
    const now = Date.now();
    if ((await services.redis.zcount(key, `(${now}`, '+inf')) === 0) return true;
    if (now >= until) {
      services.log.warn(
        { campaign_id: campaignId },
        'campaign state changed while a dial was still under way after the wait; answering anyway',
      );
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
