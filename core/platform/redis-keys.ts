// Every Redis key the service reads or writes is named here, and nowhere else (BullMQ names its
// own, `<prefix>:<queue>:...`, under the same prefix). Each key starts with the deployment's
// QUEUE_PREFIX, so deployments sharing a Redis keep apart. The spellings are what live data is
// stored under: renaming one orphans that data on the next deploy (a rate-limit window or a lock
// would only reset, but dial slots, campaign counters and booking reminders would be lost).
//
// A key is `<prefix>:<scope>:<rest>`. The scope is what one script call touches: for Redis
// Cluster, every key of a call must hash to one slot, and wrapping the scope in a hash tag
// (`{...}`) in `key` below would do that for all keys at once. Some calls cross scopes today
// and would need reshaping first: the dial-slot scripts also touch `pacingFirms` (the reaper's
// list), the rate-limit script also reads `readCacheEpoch`, and the booking-reminder store and
// cancel scripts also touch the firm's `firmRemindersDue`.

const key = (prefix: string, scope: string, ...rest: string[]): string => [prefix, scope, ...rest].join(':');

/** Which counter of a rate-limit window: per principal, per firm's webhooks, per unauthenticated address. */
export type RateLimitKind = 'p' | 'w' | 'u';

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /**
   * HASH: one sliding rate-limit window, the requests let in by 5-second bucket (field: the
   * bucket's number since the Unix epoch). Expires a window after its last request
   * (api/middleware/rate-limit.ts).
   */
  rateLimitCounts(kind: RateLimitKind, id: string): string {
    return key(this.prefix, 'rate', kind, id);
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
    return key(this.prefix, `pacing:${firm}`, 'slots');
  }

  /** ZSET: the firm's parked jobs waiting for a dial slot (queue and job id), scored by place in line. */
  dialWaiters(firm: string): string {
    return key(this.prefix, `pacing:${firm}`, 'waiters');
  }

  /**
   * ZSET: the firm's waiters popped for a free slot whose promotion is under way, scored by when
   * the wake-up counts as lost (the reaper then finishes it).
   */
  dialWaking(firm: string): string {
    return key(this.prefix, `pacing:${firm}`, 'waking');
  }

  /** SET: the firms with parked dial waiters, which the reaper visits (until their line empties). */
  pacingFirms(): string {
    return key(this.prefix, 'pacing', 'firms');
  }

  /**
   * HASH: a campaign's leads (phone → placed | completed | failed); `campaignCounts` moves with
   * it. Both expire 30 days after the campaign ends (core/domain/campaigns/campaign-progress.ts).
   */
  campaignLeads(campaignId: string): string {
    return key(this.prefix, `campaign:${campaignId}`, 'leads');
  }

  /** HASH: a campaign's counts (placed, completed, failed) of its leads. */
  campaignCounts(campaignId: string): string {
    return key(this.prefix, `campaign:${campaignId}`, 'counts');
  }

  /**
   * ZSET: the lot of a paused campaign's parked jobs (queue and job id), oldest first
   * (core/domain/pacing/parking.ts); emptied by the resume. No expiry.
   */
  campaignParked(campaignId: string): string {
    return key(this.prefix, `campaign:${campaignId}`, 'parked');
  }

  /**
   * HASH: one booking's record and reminders (field `booking`, and `r|<start>|<offset>|<email>`
   * per reminder; core/domain/bookings/reminder-records.ts). Expires 30 days after the booking ends.
   */
  bookingReminders(firm: string, uid: string): string {
    return key(this.prefix, 'reminders', firm, uid);
  }

  /**
   * ZSET: the firm's reminders still to come, one member per reminder (a digest of its booking
   * and field) scored by its due time, so that a firm's scheduled reminders can be counted and
   * capped (core/domain/bookings/store-booking-reminders.lua). Members due are dropped by the
   * next store; the key expires a day after its last member is due.
   */
  firmRemindersDue(firm: string): string {
    return key(this.prefix, 'reminders-due', firm);
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

  /**
   * ZSET: the firm's pending contacts imports (job ids), scored by when the entry lapses
   * (core/domain/contacts/import-slots.ts). Expires with its last entry.
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

  /** The lock of one campaign (its adds of leads, launch, pause, resume, cancel, completion). */
  campaignLock(campaignId: string): string {
    return key(this.prefix, 'lock', 'campaign', campaignId);
  }

  /** The lock of a firm's call-list rebuild (one process reads the firm's calls at a time). */
  callListBuildLock(firm: string): string {
    return key(this.prefix, 'lock', 'call-list', firm);
  }

  /** The lock of a firm's workflows. */
  workflowsLock(firm: string): string {
    return key(this.prefix, 'lock', 'workflows', firm);
  }

  /** The lock of a firm's contact imports (one import runs at a time per firm). */
  contactsImportLock(firm: string): string {
    return key(this.prefix, 'lock', 'contacts-import', firm);
  }

  /** The lock of a firm's session revocation. */
  sessionRevocationLock(firm: string): string {
    return key(this.prefix, 'lock', 'session-revocation', firm);
  }

  /** The lock of a firm's Clio OAuth tokens (one refresh at a time, however many workers need one). */
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

/** The keys under `prefix` (QUEUE_PREFIX). */
export function redisKeys(prefix: string): RedisKeys {
  let keys = byPrefix.get(prefix);
  if (keys === undefined) byPrefix.set(prefix, (keys = new RedisKeys(prefix)));
  return keys;
}
