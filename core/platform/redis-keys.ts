import { createHash } from 'node:crypto';

// Every Redis key the service reads or writes is named here, and nowhere else (BullMQ names its
// own, `<prefix>:<queue>:...`, under the same prefix: jobs/queues.ts). Each key starts with the
// deployment's QUEUE_PREFIX, so deployments sharing a Redis keep apart. The spellings are what
// live data is stored under: renaming one orphans that data on the next deploy (a rate-limit
// window or a lock would only reset, but dial slots, campaign counters and booking reminders
// would be lost).
//
// A key is `<prefix>:<scope>:<rest>`. On a Redis Cluster (REDIS_CLUSTER=true) every key one
// script call or MULTI touches must hash to one slot, so the keys used together carry a hash
// tag (`{...}`: only that part picks the slot), and only when the cluster flag is on: a
// single-node deployment keeps the spellings its data is stored under. The groups:
// - a campaign's leads, counts and parked lot: `{<campaign id>}`;
// - a firm's booking reminders and its `firmRemindersDue`: `{<firm>}`;
// - a subject's events not yet fanned out and its delivery lanes (one per endpoint), which a
//   fan-out's look at a lane reads together: `{<subject hash>}`;
// - a firm's event listeners' change epoch and changes under way, read together: `{<firm>}`;
// - a firm's dial slots, waiters and waking set, with the reaper's list of firms, which the
//   dial-slot scripts update in the same call: one of PACING_LISTS lists, `{pacing-<n>}`, the
//   firm's by a hash of its slug, so that firms spread over the cluster's nodes and the
//   scripts stay single calls (atomic, as on one node).
// Firm slugs and campaign ids hold no braces, so the tag is exactly the part named. Every other
// key is used alone (the rate limiter reads the read-cache epoch with a GET beside its script),
// needs no tag and keeps one spelling. A cluster's first start needs no
// migration: there is no data under the tagged spellings before it.

/** How many reaper lists of pacing firms a cluster has (1 on a single node). */
export const PACING_LISTS = 16;

const key = (prefix: string, scope: string, ...rest: string[]): string => [prefix, scope, ...rest].join(':');

/**
 * Which counter of a rate-limit window: per principal, per firm's webhooks, per unauthenticated
 * address, per address on the routes that take no token, per widget session, per widget
 * visitor's address (with the firm).
 */
export type RateLimitKind = 'p' | 'w' | 'u' | 'a' | 'ws' | 'wa';

export class RedisKeys {
  constructor(
    readonly prefix: string,
    /** REDIS_CLUSTER: keys used together carry a hash tag. */
    readonly cluster = false,
  ) {
    // A brace in the prefix would become every key's hash tag: one slot for the whole service.
    if (cluster && /[{}]/.test(prefix))
      throw new Error(`QUEUE_PREFIX may not contain "{" or "}" with REDIS_CLUSTER=true (got "${prefix}")`);
  }

  /**
   * BullMQ's `prefix` for `queue`: QUEUE_PREFIX; on a cluster, `{<QUEUE_PREFIX>:<queue>}`, a hash
   * tag per queue, so each queue's keys share a slot (BullMQ's scripts touch several at once)
   * and the queues spread over the nodes.
   */
  queuePrefix(queue: string): string {
    return this.cluster ? `{${this.prefix}:${queue}}` : this.prefix;
  }

  /** `part` as the hash tag of its key on a cluster; as it is on a single node. */
  private tag(part: string): string {
    return this.cluster ? `{${part}}` : part;
  }

  /** The hash tag of a firm's pacing keys and of the reaper list it belongs to (cluster only). */
  private pacingTag(firm: string): string {
    const n = createHash('sha1').update(firm).digest().readUInt16BE(0) % PACING_LISTS;
    return `{pacing-${n}}`;
  }

  private pacing(firm: string, what: string): string {
    return this.cluster
      ? key(this.prefix, this.pacingTag(firm), firm, what)
      : key(this.prefix, `pacing:${firm}`, what);
  }

  /**
   * HASH: one sliding rate-limit window, the requests let in by 5-second bucket (field: the
   * bucket's number since the Unix epoch). Expires a window after its last request
   * (api/middleware/rate-limit.ts).
   */
  rateLimitCounts(kind: RateLimitKind, id: string): string {
    return key(this.prefix, 'rate', kind, id);
  }

  /**
   * HASH: the firm's webhook keys sealed with the master key (`value`) and the firm's `updated_at`
   * they are from (`version`), so a webhook delivery is authenticated while MongoDB is unreachable
   * (core/domain/firms/webhook-keys.ts). No expiry; removed with the firm's change under way.
   */
  firmWebhookKeys(firm: string): string {
    return key(this.prefix, 'firm', firm, 'webhook-keys');
  }

  /**
   * STRING, an integer: the read cache's change epoch, INCRed around every write to a cached
   * collection (core/platform/db/read-cache.ts). No expiry.
   */
  readCacheEpoch(): string {
    return key(this.prefix, 'read-cache', 'epoch');
  }

  /**
   * ZSET: the firm's dial slots, each a call id scored by when its lease runs out
   * (core/domain/pacing/dial-slots.ts). No expiry: expired members are removed by the scripts.
   */
  dialSlots(firm: string): string {
    return this.pacing(firm, 'slots');
  }

  /** ZSET: the firm's parked jobs waiting for a dial slot (queue and job id), scored by place in line. */
  dialWaiters(firm: string): string {
    return this.pacing(firm, 'waiters');
  }

  /**
   * ZSET: the firm's waiters popped for a free slot whose promotion is under way, scored by when
   * the wake-up counts as lost (the reaper then finishes it).
   */
  dialWaking(firm: string): string {
    return this.pacing(firm, 'waking');
  }

  /**
   * SET: the firms with parked dial waiters, which the reaper visits (until their line empties):
   * the list `firm` belongs to (on a cluster, the one in its pacing keys' slot).
   */
  pacingFirms(firm: string): string {
    return this.cluster
      ? key(this.prefix, this.pacingTag(firm), 'firms')
      : key(this.prefix, 'pacing', 'firms');
  }

  /**
   * ZSET: the dial attempts of `firm` to `phone` in the last 24 h, each a call id scored by when
   * it was dialled (core/domain/compliance/frequency.ts). In the firm's pacing slot on a cluster,
   * so one script takes a dial slot and counts the attempt together. Expires 24 h after its
   * last attempt.
   */
  dialAttempts(firm: string, phone: string): string {
    return this.pacing(firm, `attempts:${phone}`);
  }

  /**
   * STRING: present while the firm's `dialAttempts` keys hold every attempt its dial decisions
   * record (set by their rebuild after Redis lost its data: core/domain/compliance/frequency.ts).
   * No expiry: it goes only with the data it vouches for.
   */
  dialAttemptsReady(firm: string): string {
    return this.pacing(firm, 'attempts-ready');
  }

  /**
   * STRING: the token of the firm's rebuild of its dial attempts under way (expires after an
   * hour): the rebuild sets the ready mark only if it is still there (Redis kept its data).
   */
  dialAttemptsRebuilding(firm: string): string {
    return this.pacing(firm, 'attempts-rebuilding');
  }

  /**
   * SET: the numbers of the firm's do-not-call list, a copy of its MongoDB key documents that
   * lets the request stage of the dial gate say "not listed" without a database read
   * (core/domain/compliance/dnc-index.ts). No expiry; numbers taken off leave when next seen.
   */
  dncListed(firm: string): string {
    return this.pacing(firm, 'dnc');
  }

  /**
   * STRING: present while `dncListed` holds every number of the list (set by the index's
   * rebuild). Expires an hour after the rebuild, which then runs again.
   */
  dncIndexReady(firm: string): string {
    return this.pacing(firm, 'dnc-ready');
  }

  /** Every list of `pacingFirms` (the reaper visits each). */
  pacingFirmLists(): string[] {
    if (!this.cluster) return [key(this.prefix, 'pacing', 'firms')];
    return Array.from({ length: PACING_LISTS }, (_, n) => key(this.prefix, `{pacing-${n}}`, 'firms'));
  }

  /**
   * HASH: a campaign's leads (phone → placed | completed | failed); `campaignCounts` moves with
   * it. Both expire 30 days after the campaign ends (core/domain/campaigns/campaign-progress.ts).
   */
  campaignLeads(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'leads');
  }

  /**
   * SET: a campaign's phones not called for one reason (`no_consent`, `dnc`, …): a repeated
   * skip adds nothing; its size is the count (core/domain/campaigns/campaign-progress.ts).
   */
  campaignSkipped(campaignId: string, reason: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'skipped', reason);
  }

  /**
   * ZSET: a campaign's calls whose dial is under way (member: the call id; score: the time, ms on
   * the service's clock, by which that attempt is over at the latest), so that a pause or cancel
   * answers only once they are (core/domain/calls/dials-under-way.ts). Expires with its latest
   * member.
   */
  campaignDialling(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'dialling');
  }

  /**
   * ZSET: a firm's outbound dials under way (member: the number and the call id, `<e164>|<call>`;
   * score: the time by which that attempt is over at the latest), so that a do-not-call addition
   * answers only once those to its numbers are (core/domain/calls/dials-under-way.ts). Expires
   * with its latest member.
   */
  firmDialling(firm: string): string {
    return key(this.prefix, 'firm', firm, 'dialling');
  }

  /** HASH: a campaign's counts (placed, completed, failed) of its leads. */
  campaignCounts(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'counts');
  }

  /**
   * ZSET: a campaign's phones the dial gate holds (member: the phone; score: when it may be called,
   * ms on the service's clock), until the lead moves (advance-lead.lua removes it). Expires 9 days
   * after the last hold (a hold is at most 8 days), and is deleted when the campaign ends.
   */
  campaignWaiting(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'waiting');
  }

  /**
   * HASH: the kill switch's marks of a campaign's calls (call id → flags: dialled, dial failed,
   * ended, opted out), so a call counts once however often its events come
   * (core/domain/campaigns/kill-switch-windows.ts). Expires 30 days after its last call.
   */
  campaignKillMarks(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'kill-marks');
  }

  /** LIST: the kill switch's window of the campaign's last ended calls (call ids, newest first). */
  campaignKillCalls(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'kill-calls');
  }

  /** LIST: the kill switch's window of the campaign's last dial attempts (call ids, newest first). */
  campaignKillDials(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'kill-dials');
  }

  /**
   * ZSET: the lot of a paused campaign's parked jobs (queue and job id), oldest first
   * (core/domain/pacing/parking.ts); emptied by the resume. No expiry.
   */
  campaignParked(campaignId: string): string {
    return key(this.prefix, 'campaign', this.tag(campaignId), 'parked');
  }

  /**
   * HASH: one booking's record and reminders (field `booking`, and `r|<start>|<offset>|<email>`
   * per reminder; core/domain/bookings/reminder-records.ts). Expires 30 days after the booking ends.
   */
  bookingReminders(firm: string, uid: string): string {
    return key(this.prefix, 'reminders', this.tag(firm), uid);
  }

  /**
   * ZSET: the firm's reminders still to come, one member per reminder (a digest of its booking
   * and field) scored by its due time, so that a firm's scheduled reminders can be counted and
   * capped (core/domain/bookings/store-booking-reminders.lua). Members due are dropped by the
   * next store; the key expires a day after its last member is due.
   */
  firmRemindersDue(firm: string): string {
    return key(this.prefix, 'reminders-due', this.tag(firm));
  }

  /**
   * STRING, an integer: the reminder mails a firm sent on one UTC day (`day`: days since the
   * epoch), capped per day (core/domain/bookings/reminders.ts). Expires two days after it began.
   */
  firmReminderMails(firm: string, day: number): string {
    return key(this.prefix, 'reminder-mails', firm, String(day));
  }

  /**
   * STRING, an integer: the widget sessions one client address (`address`: a digest of it)
   * opened with one widget key in one clock hour (`hour`: hours since the epoch;
   * core/domain/widget/widget-limits.ts). Expires when the hour is over.
   */
  widgetSessions(keyId: string, address: string, hour: number): string {
    return key(this.prefix, 'widget-sessions', keyId, address, String(hour));
  }

  /**
   * STRING, an integer: the messages a firm's widget visitors sent on one UTC day (`day`: days
   * since the epoch), capped by the firm's widget_daily_message_cap. Expires when the day is over.
   */
  widgetMessages(firm: string, day: number): string {
    return key(this.prefix, 'widget-messages', firm, String(day));
  }

  /**
   * STRING, an integer: the widget messages one visitor sent to a firm on one UTC day, by its
   * session (`id`: a digest of the widget token's subject) or by its client address (`id`: a
   * digest of the address, or of its IPv6 /64); each capped before the firm's count
   * (core/domain/widget/widget-limits.ts). Expires when the day is over.
   */
  widgetVisitorMessages(firm: string, by: 'session' | 'address', id: string, day: number): string {
    return key(this.prefix, 'widget-visitor-messages', firm, by, id, String(day));
  }

  /**
   * STRING, a chat id: the widget chat that booked for one visitor address (`address`: a digest of
   * it, or of its IPv6 /64) with a firm on one UTC day (`day`: days since the epoch), claimed with
   * SET NX (core/domain/chats/widget-booking-limits.ts). Expires when the day is over.
   */
  widgetBookingAddress(firm: string, address: string, day: number): string {
    return key(this.prefix, 'widget-booking', firm, 'address', address, String(day));
  }

  /**
   * STRING, an integer: the bookings a firm's widget chats made on one UTC day, capped by the
   * firm's widget_daily_booking_cap. Expires when the day is over.
   */
  widgetBookings(firm: string, day: number): string {
    return key(this.prefix, 'widget-booking', firm, 'count', String(day));
  }

  /**
   * HASH, firm → integer: the characters each firm's extractions sent to OpenAI on one UTC day
   * (`day`: days since the epoch), and, under `what` = `refused`, the extractions refused by the
   * firm's budget (core/domain/intake/openai-budget.ts). HINCRBY is atomic. Expires after two days.
   */
  openaiSpend(what: 'chars' | 'refused', day: number): string {
    return key(this.prefix, 'openai-spend', what, String(day));
  }

  /**
   * STRING: a solved ALTCHA challenge already used for a widget session (`challenge`: its hash),
   * claimed with SET NX so a solution opens one session only. Expires with the challenge.
   */
  altchaSpent(challenge: string): string {
    return key(this.prefix, 'altcha-spent', challenge);
  }

  /** STRING, JSON: the voice provider's list of voices, cached for an hour (core/domain/agents/voices.ts). */
  voiceList(provider: string): string {
    return key(this.prefix, 'cache', 'voices', provider);
  }

  /** STRING, JSON: the last list of voices the provider gave, kept a week, answered while it fails. */
  voiceListLastGood(provider: string): string {
    return key(this.prefix, 'cache', 'voices-last', provider);
  }

  /**
   * ZSET: the firm's pending contacts imports, members `<job id>:<bytes of its staged rows>`,
   * scored by when the entry lapses (core/domain/contacts/import-slots.ts). Expires with its last
   * entry.
   */
  contactsImportsPending(firm: string): string {
    return key(this.prefix, 'contacts-import', 'pending', firm);
  }

  /**
   * ZSET: the firm's finished calls in list-calls order, one member `<end_timestamp, 15 digits>|
   * <call_id>` each, all scored 0 so that the members' byte order is the list's order, plus the
   * member `~` once the set holds every finished call of the firm (core/domain/calls/call-list.ts).
   * Derived from MongoDB and rebuilt from it when missing; expires 14 days after its last use.
   */
  callList(firm: string): string {
    return key(this.prefix, 'call-list', firm);
  }

  // The locks: STRING, the holder's token, expiring unless renewed (core/platform/redis-mutex.ts).

  /** The lock of one call record (`call`: our call id, else `provider:<provider id>`). */
  callLock(firm: string, call: string): string {
    return key(this.prefix, 'lock', 'call', firm, call);
  }

  /** The lock of one chat's effect records (core/domain/chats/chat-effects.ts). */
  chatLock(firm: string, chat: string): string {
    return key(this.prefix, 'lock', 'chat', firm, chat);
  }

  /** The lock of one campaign (its adds of leads, launch, pause, resume, cancel, completion). */
  campaignLock(campaignId: string): string {
    return key(this.prefix, 'lock', 'campaign', campaignId);
  }

  /** The lock of a firm's call-list rebuild (one process reads the firm's calls at a time). */
  callListBuildLock(firm: string): string {
    return key(this.prefix, 'lock', 'call-list', firm);
  }

  /** The lock of a firm's webhook endpoints (their count, at most 20) and of one endpoint's record. */
  webhookEndpointsLock(firm: string, endpoint = '*'): string {
    return key(this.prefix, 'lock', 'webhook-endpoints', firm, endpoint);
  }

  /** The lock of one webhook delivery's document: its writers take turns (core/domain/events/deliveries.ts). */
  webhookDeliveryLock(delivery: string): string {
    return key(this.prefix, 'lock', 'webhook-delivery', delivery);
  }

  /**
   * STRING: since when (ms) every delivery attempt to a webhook endpoint has failed; no expiry:
   * deleted on a success, when the endpoint is enabled again and when it is deleted.
   */
  webhookFailingSince(endpoint: string): string {
    return key(this.prefix, 'webhooks', 'failing', endpoint);
  }

  /**
   * ZSET (all scores 0, members in text order): the unsettled deliveries of one lane — one
   * subject to one endpoint — as `<delivery _id>#<generation>` (core/domain/events/lanes.ts).
   */
  webhookLane(lane: string): string {
    // `<endpoint>|<subject hash>`: on a cluster the subject hash is the tag, as in eventsDue.
    const at = lane.lastIndexOf('|');
    return key(this.prefix, 'webhooks', 'lane', lane.slice(0, at + 1) + this.tag(lane.slice(at + 1)));
  }

  /** ZSET: a subject's events not yet fanned out (score: occurred_at ms; member: the event id). */
  eventsDue(firm: string, subject: string): string {
    return key(this.prefix, 'webhooks', 'due', firm, this.tag(subject));
  }

  /**
   * STRING: a random value written anew by every change to a firm's webhook endpoints (workers'
   * caches compare it; core/platform/cache-version.ts); never a counter, which a Redis that lost
   * its data restarts.
   */
  webhookEndpointsVersion(firm: string): string {
    return key(this.prefix, 'webhooks', 'endpoints-version', firm);
  }

  /**
   * STRING, an integer: bumped after every change to what listens to a firm's events (its webhook
   * endpoints, its workflow trigger index), beside `eventsListenersChanging`, whose hash tag it
   * shares (core/domain/events/listeners.ts reads both in one script). No expiry.
   */
  eventsListenersEpoch(firm: string): string {
    return key(this.prefix, 'events', 'listeners-epoch', this.tag(firm));
  }

  /**
   * ZSET: the changes to a firm's event listeners under way (member: a writer's token; score:
   * when its mark lapses, ms, should the writer die mid-change). No expiry: lapsed members are
   * removed by the next change.
   */
  eventsListenersChanging(firm: string): string {
    return key(this.prefix, 'events', 'listeners-changing', this.tag(firm));
  }

  /** HASH: webhook delivery attempts by outcome since the counters began (read by /metrics). */
  webhookDeliveryOutcomes(): string {
    return key(this.prefix, 'webhooks', 'outcomes');
  }

  /** The lock of a firm's workflows. */
  workflowsLock(firm: string): string {
    return key(this.prefix, 'lock', 'workflows', firm);
  }

  /** The writers of one workflow run's records (its steps, their effects) take turns. */
  workflowRunLock(runId: string): string {
    return key(this.prefix, 'lock', 'workflow-run', runId);
  }

  /**
   * STRING: a random value written anew by every change to a firm's workflow trigger index
   * (workers' caches compare it); never a counter, which a Redis that lost its data restarts.
   */
  workflowTriggersVersion(firm: string): string {
    return key(this.prefix, 'workflows', 'triggers-version', firm);
  }

  /** The `wait_for` key document of a lead (core/domain/workflows/runs/waits.ts). */
  workflowWaitsLock(firm: string, leadId: string): string {
    return key(this.prefix, 'lock', 'workflow-waits', firm, leadId);
  }

  /** A firm's workflow runs under way (a set of run ids): the concurrent-runs bound. */
  workflowRunsActive(firm: string): string {
    return key(this.prefix, 'workflow', 'running', firm);
  }

  /** The workflow steps a firm ran on one UTC day (a set of step ids): the steps-a-day bound. */
  workflowStepsOfDay(firm: string, day: string): string {
    return key(this.prefix, 'workflow', 'steps', firm, day);
  }

  /**
   * The firm's contacts import that began claiming phones and emails last (its job_id): a later
   * import waits while it is unfinished (core/domain/contacts/import-rows.ts).
   */
  contactsImportClaiming(firm: string): string {
    return key(this.prefix, 'contacts-import', 'claiming', firm);
  }

  /** The lock of a firm's contact imports (one import runs at a time per firm). */
  contactsImportLock(firm: string): string {
    return key(this.prefix, 'lock', 'contacts-import', firm);
  }

  /** The lock of one lead document: its writers take turns (core/domain/leads/lead-lock.ts). */
  leadLock(firm: string, leadId: string): string {
    return key(this.prefix, 'lock', 'lead', firm, leadId);
  }

  /** The lock of one appointment record (its booking effect: core/domain/appointments/booking.ts). */
  appointmentLock(firm: string, appointmentId: string): string {
    return key(this.prefix, 'lock', 'appointment', firm, appointmentId);
  }

  /**
   * HASH: a firm's free slots, one field per query (event type, dates, time zone: its digest),
   * each `<expires at ms>|<slots JSON>` kept 30 s, bounded in queries and bytes per firm
   * (core/domain/appointments/availability.ts).
   */
  appointmentSlots(firm: string): string {
    return key(this.prefix, 'appointments', firm, 'slots');
  }

  /** The lock of a firm's session revocation. */
  sessionRevocationLock(firm: string): string {
    return key(this.prefix, 'lock', 'session-revocation', firm);
  }

  /** The lock of a firm's Clio OAuth tokens (one refresh at a time, however many workers need one). */
  ringcentralTokenLock(firm: string): string {
    return key(this.prefix, 'lock', 'ringcentral-token', firm);
  }

  /** One check of a firm's RingCentral subscription at a time (the connect callback, the maintenance job). */
  ringcentralSubscriptionLock(firm: string): string {
    return key(this.prefix, 'lock', 'ringcentral-subscription', firm);
  }

  /** The lock of one agent's document: its updates take turns (core/domain/agents/agents.ts). */
  agentLock(agentId: string): string {
    return key(this.prefix, 'lock', 'agent', agentId);
  }

  /** The lock of one firm's document: its writers take turns (core/domain/firms/firm-lock.ts). */
  firmLock(firm: string): string {
    return key(this.prefix, 'lock', 'firm', firm);
  }

  clioTokenLock(firm: string): string {
    return key(this.prefix, 'lock', 'clio-token', firm);
  }

  /** The lock of the webhook outbox's drain (one process moves it into the queues at a time). */
  webhookOutboxLock(): string {
    return key(this.prefix, 'lock', 'webhook-outbox');
  }

  /** A SCAN MATCH pattern for every lock above (checks that none is left over). */
  anyLock(): string {
    return key(this.prefix, 'lock', '*');
  }
}

const byPrefix = new Map<string, RedisKeys>();

/** The keys of a deployment: under its QUEUE_PREFIX, hash-tagged when REDIS_CLUSTER is on. */
export function redisKeys(config: { queuePrefix: string; redisCluster: boolean }): RedisKeys {
  const { queuePrefix: prefix, redisCluster: cluster } = config;
  const id = `${cluster ? 'c' : 's'}${prefix}`;
  let keys = byPrefix.get(id);
  if (keys === undefined) byPrefix.set(id, (keys = new RedisKeys(prefix, cluster)));
  return keys;
}
