import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import { row, summary, type Row } from './rows.js';
import type { CheckContext } from './context.js';

/**
 * Webhooks acknowledged while Redis was down were kept in MongoDB and applied once it was back
 * (docs/webhooks.md#redis-outages): each probe Retell call ended, and the outbox is empty. The
 * probe bookings are checked with every other booking (bookings.ts).
 */
export async function webhookOutboxRows(ctx: CheckContext): Promise<Row[]> {
  const db = ctx.cluster.db;
  const acked = ctx.ledger.retellProbes.filter((p) => p.started === 200 && p.ended === 200);
  const bad: string[] = [];
  for (const probe of acked) {
    const call = await db
      .collection(COLLECTIONS.calls)
      .findOne({ firm: probe.firm, provider_call_id: probe.providerCallId }, { projection: { status: 1 } });
    if (call?.status !== 'ended') bad.push(`${probe.providerCallId}: ${call?.status ?? 'missing'}`);
  }
  const left = await db.collection(COLLECTIONS.webhookOutbox).countDocuments({});
  return [
    row(
      'Retell calls acknowledged during outages: each ended',
      `${acked.length} ended`,
      summary(acked.length, bad),
      bad.length === 0,
    ),
    row('webhook outbox: empty once Redis is back', 0, left, left === 0),
  ];
}
