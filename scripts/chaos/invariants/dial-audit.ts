// The dial gate's audit against what was dialled (docs/compliance.md#audit): the dial attempts
// are exactly the decisions with stage `dial` and answer `allow`, one to one — no dial without its
// decision, no `allow` without its dial or a recorded reason why not (the call ended `error`,
// its dial failed for good), and nothing dialled that the gate blocked.
import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import type { DialDecisionDoc } from '../../../core/domain/compliance/dial-decisions.js';
import { row, summary, type Row } from './rows.js';
import type { CallFacts, CheckContext } from './context.js';

type Decision = Pick<DialDecisionDoc, '_id' | 'call_id' | 'answer' | 'reason'>;

export async function dialAuditRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { callFirms, calls, callById, dialsByCall } = facts;
  // Final dial-stage decisions (`<call>:dial`) of the call firms; deferrals have their own ids.
  const decisions = (await ctx.cluster.db
    .collection(COLLECTIONS.dialDecisions)
    .find(
      { firm: { $in: callFirms }, stage: 'dial', answer: { $in: ['allow', 'block'] } },
      { projection: { call_id: 1, answer: 1, reason: 1 } },
    )
    .toArray()) as unknown as Decision[];
  const byCall = new Map<string, Decision[]>();
  for (const d of decisions) byCall.set(d.call_id, [...(byCall.get(d.call_id) ?? []), d]);

  const dialled = calls.filter((c) => (dialsByCall.get(c._id) ?? 0) > 0);
  const undecided: string[] = [];
  for (const call of dialled) {
    const own = byCall.get(call._id) ?? [];
    if (own.length !== 1 || own[0]!.answer !== 'allow')
      undecided.push(`${call._id}: ${own.map((d) => d.answer).join('+') || 'no decision'}`);
  }

  const allowed = decisions.filter((d) => d.answer === 'allow');
  const unexplained: string[] = [];
  const reasons = new Map<string, number>();
  for (const d of allowed) {
    if ((dialsByCall.get(d.call_id) ?? 0) > 0) continue;
    const call = callById.get(d.call_id);
    if (call?.status === 'error' && call.disconnection_reason === 'dial_failed') {
      reasons.set('dial_failed', (reasons.get('dial_failed') ?? 0) + 1);
      continue;
    }
    unexplained.push(`${d.call_id}: ${call === undefined ? 'no call' : `${call.status}, not dialled`}`);
  }

  const blocked = decisions.filter((d) => d.answer === 'block');
  const dialledBlocked = blocked
    .filter((d) => (dialsByCall.get(d.call_id) ?? 0) > 0)
    .map((d) => `${d.call_id}: blocked (${d.reason}), dialled`);

  const failedForGood = reasons.get('dial_failed') ?? 0;
  return [
    row(
      'dial audit: every dial has its one `allow` decision',
      dialled.length,
      summary(dialled.length, undecided),
      undecided.length === 0,
    ),
    row(
      'dial audit: every `allow` has its dial, or its call says why not',
      `${allowed.length} (${failedForGood} failed for good)`,
      summary(allowed.length, unexplained),
      unexplained.length === 0,
    ),
    row(
      'dial audit: nothing dialled that the gate blocked',
      `0 of ${blocked.length}`,
      dialledBlocked.length === 0 ? `0 of ${blocked.length}` : summary(blocked.length, dialledBlocked),
      dialledBlocked.length === 0,
    ),
  ];
}
