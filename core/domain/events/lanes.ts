import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import type { DomainEvent } from './event-types.js';
import { subjectKey } from './record-event.js';

// The order of deliveries, kept in Redis beside the jobs that act on it (docs/events.md#ordering).
//
// A lane is the deliveries of one subject to one endpoint. Its unsettled deliveries are a sorted
// set whose members (`<delivery _id>#<generation>`, all of score 0) sort as their events happened,
// since a delivery's `_id` is `<endpoint>|<subject hash>|<occurred_at ms>|<event id>…`: "is an
// earlier one still pending?" and "which comes next?" are one range read each. A subject's events
// not yet fanned out are a sorted set by time, so a delivery does not go before the delivery of an
// earlier event that is still being made. Both are as durable as the queues (Redis runs
// `noeviction`, with persistence); the deliveries themselves are MongoDB documents.

export interface LaneMember {
  delivery: string;
  generation: number;
}

/** The lane of a delivery `_id`: its first two parts. */
export const laneOfId = (id: string): string => id.split('|').slice(0, 2).join('|');
export const laneOf = (endpoint: string, subject: string): string => `${endpoint}|${subjectKey(subject)}`;

const member = (m: LaneMember) => `${m.delivery}#${m.generation}`;
function parse(text: string): LaneMember {
  const at = text.lastIndexOf('#');
  return { delivery: text.slice(0, at), generation: Number(text.slice(at + 1)) };
}

const laneKey = (services: Services, delivery: string) =>
  redisKeys(services.config).webhookLane(laneOfId(delivery));

const BEGIN = loadRedisScript(new URL('./begin-delivery.lua', import.meta.url), {
  keys: ['due', 'lane'],
  args: ['event', 'at', 'member', 'clear'],
});
const SETTLE = loadRedisScript(new URL('./settle-delivery.lua', import.meta.url), {
  keys: ['lane'],
  args: ['member', 'delivery'],
});

/**
 * A fan-out's first look at a delivery's lane, in one round trip: true when it may be sent now (no
 * earlier event of the subject still to be fanned out, no earlier unsettled delivery in the lane);
 * it has then joined its lane, in flight, and with `clearDue` the event is no longer due. False
 * changes nothing.
 */
export async function beginInLane(
  services: Services,
  e: DueEvent,
  m: LaneMember,
  clearDue: boolean,
): Promise<boolean> {
  const result = await BEGIN.run(
    services.redis,
    { due: dueKey(services, e), lane: laneKey(services, m.delivery) },
    { event: e._id, at: e.occurred_at.getTime(), member: member(m), clear: clearDue ? 1 : 0 },
  );
  return Number(result) === 1;
}

/**
 * A settled delivery leaves its lane, in one round trip; returns the lane's next unsettled
 * delivery (null when none).
 */
export async function settleInLane(services: Services, m: LaneMember): Promise<LaneMember | null> {
  const next = await SETTLE.run(
    services.redis,
    { lane: laneKey(services, m.delivery) },
    { member: member(m), delivery: m.delivery },
  );
  return typeof next === 'string' ? parse(next) : null;
}

export async function joinLane(services: Services, m: LaneMember): Promise<void> {
  await services.redis.zadd(laneKey(services, m.delivery), 0, member(m));
}

export async function leaveLane(services: Services, m: LaneMember): Promise<void> {
  await services.redis.zrem(laneKey(services, m.delivery), member(m));
}

/** Up to `limit` unsettled deliveries of the lane before `m`, first first. */
export async function earlierInLane(services: Services, m: LaneMember, limit = 20): Promise<LaneMember[]> {
  const found = await services.redis.zrangebylex(
    laneKey(services, m.delivery),
    '-',
    `(${member(m)}`,
    'LIMIT',
    0,
    limit,
  );
  return found.map(parse).filter((e) => e.delivery !== m.delivery);
}

/** The first unsettled delivery of the lane after `m`. */
export async function nextInLane(services: Services, m: LaneMember): Promise<LaneMember | null> {
  const found = await services.redis.zrangebylex(
    laneKey(services, m.delivery),
    `(${m.delivery}#~`,
    '+',
    'LIMIT',
    0,
    1,
  );
  return found[0] === undefined ? null : parse(found[0]);
}

/** Whether `m` is still in its lane. */
export async function inLane(services: Services, m: LaneMember): Promise<boolean> {
  return (await services.redis.zscore(laneKey(services, m.delivery), member(m))) !== null;
}

type DueEvent = Pick<DomainEvent, '_id' | 'firm' | 'subject' | 'occurred_at'>;
const dueKey = (services: Services, e: Pick<DomainEvent, 'firm' | 'subject'>) =>
  redisKeys(services.config).eventsDue(e.firm, subjectKey(e.subject));

/** Events recorded, their fan-out to come. */
export async function markDue(services: Services, events: readonly DueEvent[]): Promise<void> {
  if (events.length === 0) return;
  const pipeline = services.redis.pipeline();
  for (const e of events) pipeline.zadd(dueKey(services, e), e.occurred_at.getTime(), e._id);
  const results = await pipeline.exec();
  for (const [err] of results ?? []) if (err) throw err;
}

export async function clearDue(services: Services, e: DueEvent): Promise<void> {
  await services.redis.zrem(dueKey(services, e), e._id);
}

/** The first event of the subject, before `e`, still to be fanned out; null when none. */
export async function earlierDue(
  services: Services,
  e: DueEvent,
): Promise<{ event: string; at: number } | null> {
  const at = e.occurred_at.getTime();
  const found = await services.redis.zrangebyscore(
    dueKey(services, e),
    '-inf',
    at,
    'WITHSCORES',
    'LIMIT',
    0,
    20,
  );
  for (let i = 0; i < found.length; i += 2) {
    const id = found[i]!;
    const score = Number(found[i + 1]);
    if (id !== e._id && (score < at || id < e._id)) return { event: id, at: score };
  }
  return null;
}
