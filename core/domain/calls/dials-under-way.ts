import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';

// Dials under way, for the requests that answer "no call is dialled from now on".
//
// A campaign's pause or cancel (docs/campaigns.md#pause-resume-cancel): the call's job looks at its
// campaign right before the dial, but between that look and the provider's answer there is the
// dial gate and the provider's request: a pause answered in that gap would be followed by a dial.
// So each campaign call's dial attempt is registered before its look and unregistered once the
// dial is over (counted in calls_placed, or held, deferred, blocked), and the pause or cancel, once
// its state is written, waits for the attempts registered by then: any later attempt's look sees
// the new state.
//
// A number put on the firm's do-not-call list (docs/compliance.md): the same gap lies between the
// dial's do-not-call read and the provider's answer. Every outbound dial attempt is registered in
// its firm's set (member: the number and the call) before that read; the addition, once its
// entries are written, waits for the attempts to its numbers registered by then.
//
// A member left by a worker that died mid-dial counts only until its deadline.

/** How long one dial attempt may take at the most (the provider's request is 30 s at most). */
export const DIAL_ATTEMPT_MAX_MS = 60_000;
/** How long a pause, cancel or do-not-call addition waits for the dials under way before it answers anyway. */
export const DIALS_SETTLE_WAIT_MS = 10_000;
const POLL_MS = 20;

async function register(services: Services, key: string, member: string): Promise<void> {
  const replies = await services.redis
    .multi()
    .zadd(key, Date.now() + DIAL_ATTEMPT_MAX_MS, member)
    .pexpire(key, DIAL_ATTEMPT_MAX_MS)
    .exec();
  // A MULTI answers each command's error in its replies: an attempt not registered is not dialled.
  const failed =
    replies === null
      ? new Error('the dial registration was not applied')
      : replies.find(([err]) => err !== null)?.[0];
  if (failed) throw failed;
}

async function unregister(services: Services, key: string, member: string, about: object): Promise<void> {
  try {
    await services.redis.zrem(key, member);
  } catch (err) {
    services.log.warn({ err, ...about }, 'could not unregister a dial attempt');
  }
}

/**
 * Waits until no member of `key` that `counts` (all by default) is under way (each past its
 * deadline counts as over), at most DIALS_SETTLE_WAIT_MS; false when some still were then.
 */
async function settled(
  services: Services,
  key: string,
  about: object,
  counts?: (member: string) => boolean,
): Promise<boolean> {
  const until = Date.now() + DIALS_SETTLE_WAIT_MS;
  for (;;) {
    const now = Date.now();
    const live =
      counts === undefined
        ? await services.redis.zcount(key, `(${now}`, '+inf')
        : (await services.redis.zrangebyscore(key, `(${now}`, '+inf')).filter(counts).length;
    if (live === 0) return true;
    if (now >= until) {
      services.log.warn(about, 'answering while a dial was still under way after the wait');
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Registers one campaign call's dial attempt (before the job looks at its campaign). */
export function dialStarting(services: Services, campaignId: string, callId: string): Promise<void> {
  return register(services, redisKeys(services.config).campaignDialling(campaignId), callId);
}

/** The attempt is over (dialled and counted, or not dialled). Best effort: the deadline ends it too. */
export function dialOver(services: Services, campaignId: string, callId: string): Promise<void> {
  return unregister(services, redisKeys(services.config).campaignDialling(campaignId), callId, {
    campaign_id: campaignId,
    call_id: callId,
  });
}

/** Waits until none of the campaign's dial attempts is under way, at most DIALS_SETTLE_WAIT_MS. */
export function dialsSettled(services: Services, campaignId: string): Promise<boolean> {
  return settled(services, redisKeys(services.config).campaignDialling(campaignId), {
    campaign_id: campaignId,
  });
}

const numberMember = (phone: string, callId: string): string => `${phone}|${callId}`;

/** Registers one outbound call's dial attempt to `phone` (before its do-not-call read). */
export function numberDialStarting(
  services: Services,
  firm: string,
  phone: string,
  callId: string,
): Promise<void> {
  return register(services, redisKeys(services.config).firmDialling(firm), numberMember(phone, callId));
}

/** The attempt to `phone` is over. Best effort: the deadline ends it too. */
export function numberDialOver(
  services: Services,
  firm: string,
  phone: string,
  callId: string,
): Promise<void> {
  return unregister(services, redisKeys(services.config).firmDialling(firm), numberMember(phone, callId), {
    firm,
    call_id: callId,
  });
}

/**
 * Waits until no dial attempt of the firm to one of `phones` is under way, at most
 * DIALS_SETTLE_WAIT_MS. One read per poll whatever the count of numbers: the firm's attempts
 * under way are at most its concurrent calls.
 */
export function numberDialsSettled(
  services: Services,
  firm: string,
  phones: readonly string[],
): Promise<boolean> {
  if (phones.length === 0) return Promise.resolve(true);
  const asked = new Set(phones);
  return settled(services, redisKeys(services.config).firmDialling(firm), { firm }, (member) =>
    asked.has(member.slice(0, member.lastIndexOf('|'))),
  );
}
