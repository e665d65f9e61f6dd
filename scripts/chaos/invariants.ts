// The end of a chaos run: wait until the service has finished everything it acknowledged, then
// hold it to the invariants, checked against the fakes (what the outside world received), the
// database and Redis (what the service stored), and the ledger (what it answered). One file per
// group of invariants in invariants/.
import { answerRows } from './invariants/answers.js';
import { bookingRows } from './invariants/bookings.js';
import { callEffectRows } from './invariants/call-effects.js';
import { campaignRows } from './invariants/campaign.js';
import { readCallFacts, type CheckContext } from './invariants/context.js';
import { dialAuditRows } from './invariants/dial-audit.js';
import { directCallRows } from './invariants/direct-calls.js';
import { eventsOutRows } from './invariants/events-out.js';
import { faultRows } from './invariants/faults.js';
import { importRows } from './invariants/imports.js';
import { jobRows } from './invariants/jobs.js';
import { redisRows } from './invariants/redis.js';
import { webhookOutboxRows } from './invariants/webhook-outbox.js';
import type { Row } from './invariants/rows.js';

export type { CheckContext } from './invariants/context.js';
export type { Row } from './invariants/rows.js';
export { settle } from './invariants/settle.js';

/** Every invariant's row, in the order the report shows them. */
export async function checkInvariants(ctx: CheckContext): Promise<Row[]> {
  const facts = await readCallFacts(ctx);
  return [
    ...(await campaignRows(ctx, facts)),
    ...(await directCallRows(ctx, facts)),
    ...(await dialAuditRows(ctx, facts)),
    ...(await callEffectRows(ctx, facts)),
    ...(await bookingRows(ctx)),
    ...(await webhookOutboxRows(ctx)),
    ...(await eventsOutRows(ctx)),
    ...(await importRows(ctx)),
    ...(await jobRows(ctx, facts)),
    ...answerRows(ctx),
    ...faultRows(ctx),
    ...(await redisRows(ctx, facts)),
  ];
}
