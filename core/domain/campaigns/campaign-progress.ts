import type { Services } from '../../wiring/services.js';
import { defineRedisScript } from '../../platform/redis-script.js';

// A running campaign's counters, kept in Redis because FerretDB loses concurrent $incs: a hash
// of each lead's (distinct phone's) state and a hash of counts, moved together by one script,
// so a repeated event (a retried job, a redelivered webhook) never counts twice. Counts are per
// lead: calls_placed = leads called at least once; calls_completed = leads with whom a
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
  `${services.config.queuePrefix}:campaign:${campaignId}:leads`;
const countsKey = (services: Services, campaignId: string) =>
  `${services.config.queuePrefix}:campaign:${campaignId}:counts`;

/**
 * KEYS: leads, counts. ARGV: phone, new state, '1' when a call was placed for it.
 * A state only moves forward (placed → completed | failed); returns {changed, placed, completed, failed}.
 */
const ADVANCE = defineRedisScript(`
local rank = { placed = 1, completed = 2, failed = 2 }
local from = redis.call('HGET', KEYS[1], ARGV[1])
local fromRank = 0
if from then fromRank = rank[from] end
local to = ARGV[2]
local changed = 0
if rank[to] > fromRank then
  redis.call('HSET', KEYS[1], ARGV[1], to)
  if fromRank == 0 and (to == 'placed' or ARGV[3] == '1') then redis.call('HINCRBY', KEYS[2], 'placed', 1) end
  if rank[to] == 2 then redis.call('HINCRBY', KEYS[2], to, 1) end
  changed = 1
end
local c = redis.call('HMGET', KEYS[2], 'placed', 'completed', 'failed')
return { changed, tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0 }
`);

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
    [leadsKey(services, campaignId), countsKey(services, campaignId)],
    [phone, to, callPlaced ? '1' : '0'],
  )) as number[];
  return {
    changed: reply[0] === 1,
    counts: { calls_placed: reply[1] ?? 0, calls_completed: reply[2] ?? 0, calls_failed: reply[3] ?? 0 },
  };
}

/** The counters of several campaigns in one round trip (null: none kept, e.g. expired). */
export async function readCounts(
  services: Services,
  campaignIds: string[],
): Promise<Array<CampaignCounts | null>> {
  if (campaignIds.length === 0) return [];
  const pipeline = services.redis.pipeline();
  for (const id of campaignIds) pipeline.hmget(countsKey(services, id), 'placed', 'completed', 'failed');
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([err, value]) => {
    if (err) throw err;
    const [placed, completed, failed] = value as Array<string | null>;
    if (placed === null && completed === null && failed === null) return null;
    return {
      calls_placed: Number(placed ?? 0),
      calls_completed: Number(completed ?? 0),
      calls_failed: Number(failed ?? 0),
    };
  });
}

/** A finished campaign's counters stay in Redis this long (late events); the campaign keeps a copy. */
const RETAIN_AFTER_END_S = 30 * 24 * 3600;

export async function retainCountsAfterEnd(services: Services, campaignId: string): Promise<void> {
  await services.redis
    .multi()
    .expire(leadsKey(services, campaignId), RETAIN_AFTER_END_S)
    .expire(countsKey(services, campaignId), RETAIN_AFTER_END_S)
    .exec();
}
