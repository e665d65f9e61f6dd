import { row, summary, type Row } from './rows.js';
import type { CallFacts, CheckContext } from './context.js';

/** create-outbound-call: every 200 has its one call, dialled once; nothing stored for a refusal. */
export async function directCallRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { ledger, firms } = ctx;
  const { calls, callById, dialsByCall } = facts;
  const rows: Row[] = [];
  const direct = ledger.directCalls;
  const okDirect = direct.filter((d) => d.status === 200);
  const directBad: string[] = [];
  for (const d of okDirect) {
    const ids = new Set(d.okCallIds);
    const call = callById.get(d.callId!);
    const kind = d.toNumber.endsWith('0000')
      ? 'not_connected'
      : d.toNumber.endsWith('9999')
        ? 'error'
        : 'ended';
    if (ids.size !== 1) directBad.push(`${d.idempotencyKey}: ${ids.size} call ids`);
    else if (call === undefined) directBad.push(`${d.callId}: missing`);
    else if (call.status !== kind) directBad.push(`${d.callId}: ${call.status}`);
    else if ((dialsByCall.get(call._id) ?? 0) !== (kind === 'error' ? 0 : 1))
      directBad.push(`${d.callId}: ${dialsByCall.get(call._id) ?? 0} dials`);
  }
  rows.push(
    row(
      'create-outbound-call: every 200 has its call, dialled once, finished',
      `${okDirect.length} (${okDirect.filter((d) => d.kind === 'probe').length} probes)`,
      summary(okDirect.length, directBad),
      directBad.length === 0,
    ),
  );
  const directStored = calls.filter((c) => c.firm === firms.direct.slug).length;
  rows.push(
    row(
      'create-outbound-call: no call stored for a refused request',
      `${okDirect.length} calls (${direct.length - okDirect.length} refused)`,
      directStored,
      directStored === okDirect.length,
    ),
  );
  const unanswered = direct.filter((d) => d.kind === 'workload' && d.status !== 200);
  rows.push(
    row(
      'create-outbound-call: every workload call accepted in the end',
      direct.filter((d) => d.kind === 'workload').length,
      summary(
        direct.filter((d) => d.kind === 'workload').length,
        unanswered.map((d) => `${d.idempotencyKey}: ${d.status}`),
      ),
      unanswered.length === 0,
    ),
  );
  return rows;
}
