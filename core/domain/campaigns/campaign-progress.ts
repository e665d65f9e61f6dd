import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import type { CallDoc } from '../calls/calls.js';

// A running campaign's counters, kept in Redis because FerretDB loses concurrent $incs: a hash
// of each lead's (distinct phone's) state and a hash of counts, moved together by one script,
// so a repeated event (a retried job, a redelivered webhook) never counts twice. Counts are per
// lead: calls_placed = leads dialled at least once (counted at the dial, so a call created and
// then blocked or cancelled before it is not); calls_completed = leads with whom a
// conversation took place; calls_failed = leads that were never reached (not_connected or
// voicemail after the last attempt, an error, or a call that could not be made). completed +
// failed = settled leads.

export type LeadProgress = 'placed' | 'completed' | 'failed';

export interface CampaignCounts {
  calls_placed: number;
  calls_completed: number;
  calls_failed: number;
}

const leadsKey = (services: Services, campaignId: string) =>
  redisKeys(services.config).campaignLeads(campaignId);
const countsKey = (services: Services, campaignId: string) =>
  redisKeys(services.config).campaignCounts(campaignId);

const waitingKey = (services: Services, campaignId: string) =>
  redisKeys(services.config).campaignWaiting(campaignId);

const ADVANCE = loadRedisScript(new URL('./advance-lead.lua', import.meta.url), {
  keys: ['leads', 'counts', 'waiting'],
  args: ['phone', 'to', 'call_placed'],
});

/** Moves one lead forward; the counts after the move, and whether it moved. */
export async function advanceLead(
  services: Services,
  campaignId: string,
  phone: string,
  to: LeadProgress,
  callPlaced: boolean,
): Promise<{ changed: boolean; counts: CampaignCounts }> {
  const reply = (await ADVANCE.run(
    services.redis,
    {
      leads: leadsKey(services, campaignId),
      counts: countsKey(services, campaignId),
      waiting: waitingKey(services, campaignId),
    },
    { phone, to, call_placed: callPlaced ? '1' : '0' },
  )) as number[];
  return {
    changed: reply[0] === 1,
    counts: { calls_placed: reply[1] ?? 0, calls_completed: reply[2] ?? 0, calls_failed: reply[3] ?? 0 },
  };
}

/** A campaign call was dialled: its lead is placed (counted once, whatever the attempt). */
export async function countLeadDialled(
  services: Services,
  call: Pick<CallDoc, 'campaign_id' | 'to_number'>,
): Promise<void> {
  if (call.campaign_id === undefined || call.to_number === null) return;
  await advanceLead(services, call.campaign_id, call.to_number, 'placed', true);
}

/** Where one lead stands: null before it is placed (or after its counters expired). */
export async function leadState(
  services: Services,
  campaignId: string,
  phone: string,
): Promise<LeadProgress | null> {
  return (await services.redis.hget(leadsKey(services, campaignId), phone)) as LeadProgress | null;
}

/**
 * The counters of several campaigns (null: none kept, e.g. expired). The commands are written
 * at once, one round trip on a single node; not as one pipeline, which a Redis Cluster client
 * refuses when the campaigns' keys live on different nodes.
 */
export async function readCounts(
  services: Services,
  campaignIds: string[],
): Promise<Array<CampaignCounts | null>> {
  const replies = await Promise.all(
    campaignIds.map((id) => services.redis.hmget(countsKey(services, id), 'placed', 'completed', 'failed')),
  );
  return replies.map(([placed, completed, failed]) => {
    if (placed === null && completed === null && failed === null) return null;
    return {
      calls_placed: Number(placed ?? 0),
      calls_completed: Number(completed ?? 0),
      calls_failed: Number(failed ?? 0),
    };
  });
}

/** A hold lasts at most 8 days (the gate blocks beyond): the set outlives its last hold by 9. */
const WAITING_TTL_MS = 9 * 86_400_000;

/**
 * The dial gate holds the campaign's phone until `untilMs` (the service's clock): the callee's
 * hours, the firm's calling window or the number's attempts. The GET shows how many are held and
 * the earliest end (readWaiting); the lead leaves the set when it moves (advanceLead).
 */
export async function noteWaiting(
  services: Services,
  campaignId: string,
  phone: string,
  untilMs: number,
): Promise<void> {
  const key = waitingKey(services, campaignId);
  await services.redis.multi().zadd(key, untilMs, phone).pexpire(key, WAITING_TTL_MS).exec();
}

export interface CampaignWaiting {
  /** Leads the dial gate holds until a later time. */
  calls_waiting: number;
  /** The earliest time one of them may be called (ISO 8601); null when none is held. */
  next_allowed_at: string | null;
}

/** The campaign's leads held by the dial gate beyond `nowMs` (the service's clock). */
export async function readWaiting(
  services: Services,
  campaignId: string,
  nowMs: number,
): Promise<CampaignWaiting> {
  const key = waitingKey(services, campaignId);
  const [count, first] = await Promise.all([
    services.redis.zcount(key, `(${nowMs}`, '+inf'),
    services.redis.zrangebyscore(key, `(${nowMs}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1),
  ]);
  return {
    calls_waiting: count,
    next_allowed_at: first[1] === undefined ? null : new Date(Number(first[1])).toISOString(),
  };
}

/**
 * Why a campaign's phone was not called (skipped_by_reason): the consent rule's reasons
 * (docs/compliance.md#consent) and the dial gate's blocks.
 */
export const SKIP_REASONS = [
  'no_consent',
  'consent_expired',
  'consent_not_for_marketing',
  'dnc',
  'country',
  'hours',
] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
export type SkippedByReason = Record<SkipReason, number>;

const skippedKey = (services: Services, campaignId: string, reason: string) =>
  redisKeys(services.config).campaignSkipped(campaignId, reason);

/** Counts the phone as skipped for the reason: once however often it is said (a set). */
export async function recordSkip(
  services: Services,
  campaignId: string,
  phone: string,
  reason: SkipReason,
): Promise<void> {
  await services.redis.sadd(skippedKey(services, campaignId, reason), phone);
}

/** The campaign's skips by reason (every reason, 0 when none). */
export async function readSkipped(services: Services, campaignId: string): Promise<SkippedByReason> {
  const sizes = await Promise.all(
    SKIP_REASONS.map((reason) => services.redis.scard(skippedKey(services, campaignId, reason))),
  );
  return Object.fromEntries(SKIP_REASONS.map((reason, i) => [reason, sizes[i] ?? 0])) as SkippedByReason;
}

/** A finished campaign's counters stay in Redis this long (late events); the campaign keeps a copy. */
const RETAIN_AFTER_END_S = 30 * 24 * 3600;

export async function retainCountsAfterEnd(services: Services, campaignId: string): Promise<void> {
  await services.redis
    .multi()
    .expire(leadsKey(services, campaignId), RETAIN_AFTER_END_S)
    .expire(countsKey(services, campaignId), RETAIN_AFTER_END_S)
    // Nothing is held any more: an ended campaign calls no one.
    .del(waitingKey(services, campaignId))
    .exec();
  await Promise.all(
    SKIP_REASONS.map((reason) =>
      services.redis.expire(skippedKey(services, campaignId, reason), RETAIN_AFTER_END_S),
    ),
  );
}
