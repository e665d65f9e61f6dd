// What the webhook outbox may hold (docs/webhooks.md#redis-outages). While Redis is down every
// authenticated delivery is kept in MongoDB; without bounds one tenant could fill the database
// (150 entries, 31.5 MB, in 5.3 s) and replays were kept again. So:
// - a delivery is kept once: its job id (the id BullMQ would have deduplicated it by) is claimed
//   in `webhook_outbox_ids` (an insert by _id, core/platform/db/claim.ts) before its entry is
//   written; a repeat finds the claim and its entry, and is acknowledged without a second copy;
// - the outbox's payload bytes are capped in all (WEBHOOK_OUTBOX_MAX_BYTES) and per firm
//   (WEBHOOK_OUTBOX_MAX_BYTES_PER_FIRM): past either, 503 with Retry-After (the sender retries,
//   Retell and most senders do; nothing is acknowledged that was not kept).
// The totals are read from MongoDB at most once a second per process and this process's own
// entries added as it writes them: concurrent writers may overshoot a cap by what they write
// within that second, never by more.
import type { Services } from '../../wiring/services.js';
import { claim } from '../../platform/db/claim.js';
import { collection, COLLECTIONS } from '../../platform/db/collections.js';
import { serviceUnavailable } from '../../platform/errors.js';

/** A kept delivery's claim: `_id` the delivery's job id, `entry` its outbox entry's `_id`. */
interface OutboxIdDoc {
  _id: string;
  entry: string;
  stored_at: Date;
}

/** How long a sender is told to wait when the outbox is full. */
const FULL_RETRY_AFTER_SECONDS = 30;
/** How old the totals may be before they are read again. */
const TOTALS_MAX_AGE_MS = 1_000;

const ids = (services: Services) => collection<OutboxIdDoc>(services.mongo.db, COLLECTIONS.webhookOutboxIds);

/**
 * Claims a delivery for the outbox entry `entry`: true when it is new, false when an entry of the
 * same delivery is kept already. A claim whose entry is gone (drained, or its write failed) is
 * given up and taken afresh.
 */
export async function claimDelivery(services: Services, delivery: string, entry: string): Promise<boolean> {
  const doc = { _id: delivery, entry, stored_at: new Date() };
  if (await claim(ids(services), doc)) return true;
  const held = await ids(services).findOne({ _id: delivery });
  if (held !== null) {
    const kept = await collection(services.mongo.db, COLLECTIONS.webhookOutbox).findOne(
      { _id: held.entry as never },
      { projection: { _id: 1 } },
    );
    if (kept !== null) return false;
    await ids(services).deleteOne({ _id: delivery, entry: held.entry });
  }
  return claim(ids(services), doc);
}

/** Gives a delivery's claim back (its entry was moved to the queue, or never written). */
export async function releaseDelivery(services: Services, delivery: string, entry: string): Promise<void> {
  await ids(services).deleteOne({ _id: delivery, entry });
}

/** The outbox's payload bytes, in all and by firm, as last read (plus this process's writes since). */
class OutboxSpace {
  private total = 0;
  private byFirm = new Map<string, number>();
  private readAt = 0;
  private reading: Promise<void> | undefined;

  constructor(private readonly services: Services) {}

  /** 503 when keeping `bytes` more for `firm` would pass a cap. */
  async assertRoom(firm: string, bytes: number): Promise<void> {
    await this.fresh();
    const { webhookOutboxMaxBytes: maxTotal, webhookOutboxMaxBytesPerFirm: maxFirm } = this.services.config;
    if ((this.byFirm.get(firm) ?? 0) + bytes > maxFirm || this.total + bytes > maxTotal) {
      this.services.log.warn(
        { firm, bytes, total: this.total, firmBytes: this.byFirm.get(firm) ?? 0 },
        'webhook outbox full: delivery refused',
      );
      throw serviceUnavailable(
        'The service cannot keep more deliveries until its queue is back; send it again later.',
        FULL_RETRY_AFTER_SECONDS,
      );
    }
  }

  /** Counts an entry this process wrote. */
  kept(firm: string, bytes: number): void {
    this.total += bytes;
    this.byFirm.set(firm, (this.byFirm.get(firm) ?? 0) + bytes);
  }

  private async fresh(): Promise<void> {
    if (Date.now() - this.readAt < TOTALS_MAX_AGE_MS) return;
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    await this.reading;
  }

  private async read(): Promise<void> {
    const rows = await collection(this.services.mongo.db, COLLECTIONS.webhookOutbox)
      .aggregate<{ _id: string; bytes: number }>([
        { $project: { _id: 0, firm: 1, bytes: 1 } },
        { $group: { _id: '$firm', bytes: { $sum: '$bytes' } } },
      ])
      .toArray();
    const byFirm = new Map<string, number>();
    let total = 0;
    for (const row of rows) {
      byFirm.set(row._id, row.bytes);
      total += row.bytes;
    }
    this.byFirm = byFirm;
    this.total = total;
    this.readAt = Date.now();
  }
}

const spaces = new WeakMap<Services, OutboxSpace>();

/** This process's view of the outbox's size. */
export function outboxSpace(services: Services): OutboxSpace {
  let space = spaces.get(services);
  if (space === undefined) spaces.set(services, (space = new OutboxSpace(services)));
  return space;
}
